/* The animation page's script (elements/drawing/animation.py inlines it after three.js).
 *
 * Reads the JSON in #anim-data: output times t (s); per body its shape (body coordinates,
 * m), colour, centre positions (global, m) and quaternions (w, x, y, z; body -> global),
 * frame-major; joints (points P on the parent and Q on the child, axes, body coordinates)
 * with their reaction forces (global, N, parent on child); traces (global, m); plots;
 * collision shapes (body coordinates, m) and, per pair of shapes, the contact force's
 * centre of pressure (global, m; null out of contact) and its normal and friction parts
 * (global, N, on the pair's second shape), drawn as arrows with one scale.
 * Between output times it interpolates: positions and forces linearly, orientations by
 * slerp. URL: ?t=SECONDS (show that time, paused), ?speed=X, ?play=0|1 (or #t=...).
 * A page of mode shapes (elements.analysis.modes.animate_modes) also has D.modes: each mode is one
 * stretch [t0, t1] of the timeline (frames i0..i1) with its label and speed; a picker
 * chooses one, and the page then plays, scrubs, plots and shows times within it (the
 * time shown is the time since the mode's start). URL: ?mode=K.
 * Drawing is three.js's (scene graph, materials, OrbitControls); no WebGL by hand.
 */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("anim-data").textContent);
  var T = D.t, N = T.length, T0 = T[0], T1 = T[N - 1];
  var MODES = D.modes || [], TOFF = 0, I0 = 0, I1 = N - 1;   // the stretch shown (modes)
  var $ = function (id) { return document.getElementById(id); };

  // -- state and URL parameters ------------------------------------------------------
  var query = new URLSearchParams(location.search);
  if (location.hash.length > 1) {
    new URLSearchParams(location.hash.slice(1)).forEach(function (v, k) { query.set(k, v); });
  }
  function num(key, fallback) {
    var v = parseFloat(query.get(key));
    return isFinite(v) ? v : fallback;
  }
  var state = {
    time: T0, playing: N > 1, speed: D.speed || 1, loop: true,
  };
  if (query.has("t")) { state.time = clamp(num("t", T0), T0, T1); state.playing = false; }
  if (query.has("speed")) state.speed = Math.max(num("speed", 1), 1e-6);
  if (query.get("play") === "0") state.playing = false;
  if (query.get("play") === "1" && N > 1) state.playing = true;

  function clamp(x, a, b) { return Math.min(Math.max(x, a), b); }

  // frame index i and weight a with T[i] <= t <= T[i + 1]
  function locate(t) {
    if (N === 1 || t <= T[0]) return [0, 0];
    if (t >= T[N - 1]) return [N - 2, 1];
    var lo = 0, hi = N - 1;
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (T[mid] <= t) lo = mid; else hi = mid; }
    var span = T[lo + 1] - T[lo];
    return [lo, span > 0 ? (t - T[lo]) / span : 0];
  }
  function lerp3(arr, i, a, out) {
    var j = Math.min(i + 1, N - 1), k = 3 * i, l = 3 * j;
    out.set(arr[k] + a * (arr[l] - arr[k]), arr[k + 1] + a * (arr[l + 1] - arr[k + 1]),
            arr[k + 2] + a * (arr[l + 2] - arr[k + 2]));
    return out;
  }
  var qa = new THREE.Quaternion(), qb = new THREE.Quaternion();
  function slerp4(arr, i, a, out) {
    var j = Math.min(i + 1, N - 1), k = 4 * i, l = 4 * j;
    qa.set(arr[k + 1], arr[k + 2], arr[k + 3], arr[k]).normalize();
    qb.set(arr[l + 1], arr[l + 2], arr[l + 3], arr[l]).normalize();
    return out.slerpQuaternions(qa, qb, a);
  }
  function fmt(x, unit) {
    if (x === null || !isFinite(x)) return "–";
    var a = Math.abs(x), s;
    if (a !== 0 && (a < 1e-3 || a >= 1e5)) s = x.toExponential(3).replace(/\.?0+e/, "e");
    else s = String(parseFloat(x.toPrecision(4)));
    return unit ? s + " " + unit : s;
  }
  function v3(a) { return new THREE.Vector3(a[0], a[1], a[2]); }
  var NORMAL_COLOR = "#0b7285", FRICTION_COLOR = "#e8590c", contactRows = {};

  // -- the legend ----------------------------------------------------------------------
  function legendRow(html) {
    var div = document.createElement("div");
    div.className = "row";
    div.appendChild(html);
    $("legend").appendChild(div);
  }
  function textNode(s) { return document.createTextNode(s); }
  function swatchRow(color, text) {
    var span = document.createElement("span");
    var sw = document.createElement("span");
    sw.className = "swatch"; sw.style.background = color;
    span.appendChild(sw); span.appendChild(textNode(text));
    return span;
  }
  (function buildLegend() {
    var title = document.createElement("div");
    title.className = "title"; title.textContent = D.title;
    $("legend").appendChild(title);
    var frame = document.createElement("span");
    frame.appendChild(swatchRow("#e03131", "X "));
    frame.appendChild(swatchRow("#2f9e44", "Y "));
    frame.appendChild(swatchRow("#1c64d1", "Z  global frame (m)"));
    legendRow(frame);
    legendRow(textNode(D.g > 0 ? "g = " + fmt(D.g, "m/s²") + " (arrow g)" : "no gravity"));
    if (D.force_scale) {
      legendRow(swatchRow("#c2255c", "joint reactions (parent on child): " +
        fmt(D.force_ref, "N") + " = " + fmt(D.force_ref * D.force_scale, "m") + " of arrow"));
    }
    if (D.contact_scale) {
      var both = document.createElement("span");
      both.appendChild(swatchRow(NORMAL_COLOR, "normal "));
      both.appendChild(swatchRow(FRICTION_COLOR, "friction: contact forces on each pair's " +
        "second shape, " + fmt(D.contact_ref, "N") + " = " +
        fmt(D.contact_ref * D.contact_scale, "m") + " of arrow"));
      legendRow(both);
      D.contacts.forEach(function (c) {
        var row = swatchRow(NORMAL_COLOR, "");
        row.className = "contact-readout";
        row.setAttribute("data-pair", c.pair);
        legendRow(row);
        contactRows[c.pair] = row;
      });
    }
    D.traces.forEach(function (tr) { legendRow(swatchRow(tr.color, "trace: " + tr.label)); });
    var hint = document.createElement("div");
    hint.className = "hint";
    hint.textContent = "drag: orbit · right-drag or shift-drag: pan · wheel: zoom · space: play";
    $("legend").appendChild(hint);
  })();

  // -- plots (2D canvases with a time cursor) -------------------------------------------
  function niceStep(range, count) {
    var raw = range / Math.max(count, 1), p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m < 1.5 ? 1 : m < 3 ? 2 : m < 7 ? 5 : 10) * p;
  }
  function Plot(spec, parent) {
    this.spec = spec;
    var box = document.createElement("div");
    box.className = "plot";
    var h = document.createElement("h3");
    h.textContent = spec.title + (spec.unit ? " (" + spec.unit + ")" : "");
    this.canvas = document.createElement("canvas");
    this.values = document.createElement("div");
    this.values.className = "values";
    this.spans = spec.series.map(function (s) {
      var sp = swatchRow(s.color, "");
      this.values.appendChild(sp);
      return sp;
    }, this);
    box.appendChild(h); box.appendChild(this.canvas); box.appendChild(this.values);
    parent.appendChild(box);
    var lo = Infinity, hi = -Infinity;
    spec.series.forEach(function (s) {
      s.y.forEach(function (v) { if (v !== null && isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    });
    if (!isFinite(lo)) { lo = -1; hi = 1; }
    if (hi - lo <= 1e-12 * Math.max(1, Math.abs(hi))) { var d = Math.abs(hi) * 0.1 || 1; lo -= d; hi += d; }
    var pad = 0.06 * (hi - lo);
    this.lo = lo - pad; this.hi = hi + pad;
    var self = this;
    function scrub(ev) {
      var r = self.canvas.getBoundingClientRect();
      var x = (ev.clientX - r.left) / r.width * self.w;
      setTime(T0 + (x - self.left) / (self.w - self.left - self.right) * (T1 - T0));
    }
    this.canvas.addEventListener("pointerdown", function (ev) {
      self.canvas.setPointerCapture(ev.pointerId); setPlaying(false); scrub(ev);
    });
    this.canvas.addEventListener("pointermove", function (ev) { if (ev.buttons) scrub(ev); });
  }
  Plot.prototype.layout = function () {
    var dpr = window.devicePixelRatio || 1, c = this.canvas;
    var w = c.clientWidth || 320, h = c.clientHeight || 150;
    c.width = Math.round(w * dpr); c.height = Math.round(h * dpr);
    this.dpr = dpr; this.w = w; this.h = h;
    this.left = 46; this.right = 8; this.top = 6; this.bottom = 20;
    var bg = document.createElement("canvas");
    bg.width = c.width; bg.height = c.height;
    var g = bg.getContext("2d");
    g.scale(dpr, dpr);
    var x0 = this.left, x1 = w - this.right, y0 = this.top, y1 = h - this.bottom;
    var self = this;
    function X(t) { return x0 + (t - T0) / ((T1 - T0) || 1) * (x1 - x0); }
    function Y(v) { return y1 - (v - self.lo) / (self.hi - self.lo) * (y1 - y0); }
    this.X = X;
    g.fillStyle = "#fff"; g.fillRect(0, 0, w, h);
    g.strokeStyle = "#e6e8ec"; g.lineWidth = 1; g.font = "10px sans-serif"; g.fillStyle = "#555";
    var ys = niceStep(this.hi - this.lo, 4);
    g.textAlign = "right"; g.textBaseline = "middle";
    for (var v = Math.ceil(this.lo / ys) * ys; v <= this.hi; v += ys) {
      var yy = Math.round(Y(v)) + 0.5;
      g.beginPath(); g.moveTo(x0, yy); g.lineTo(x1, yy); g.stroke();
      g.fillText(fmt(Math.abs(v) < ys * 1e-9 ? 0 : v), x0 - 4, yy);
    }
    var xs = niceStep((T1 - T0) || 1, 5);
    g.textAlign = "center"; g.textBaseline = "top";
    for (var t = Math.ceil((T0 - TOFF) / xs) * xs; t + TOFF <= T1 + 1e-12; t += xs) {
      var xx = Math.round(X(t + TOFF)) + 0.5;
      g.beginPath(); g.moveTo(xx, y0); g.lineTo(xx, y1); g.stroke();
      g.fillText(fmt(Math.abs(t) < xs * 1e-9 ? 0 : t), xx, y1 + 3);
    }
    g.textAlign = "left"; g.fillText("t (s)", 2, y1 + 3);
    g.strokeStyle = "#99a"; g.strokeRect(x0 + 0.5, y0 + 0.5, x1 - x0, y1 - y0);
    this.spec.series.forEach(function (s) {
      g.strokeStyle = s.color; g.lineWidth = 1.4; g.beginPath();
      var pen = false;
      for (var i = I0; i <= I1; i++) {
        var val = s.y[i];
        if (val === null || !isFinite(val)) { pen = false; continue; }
        if (pen) g.lineTo(X(T[i]), Y(val)); else g.moveTo(X(T[i]), Y(val));
        pen = true;
      }
      g.stroke();
    });
    this.bg = bg;
    this.ctx = c.getContext("2d");
  };
  Plot.prototype.draw = function (t, i, a) {
    if (!this.bg) this.layout();
    var g = this.ctx, dpr = this.dpr;
    g.setTransform(1, 0, 0, 1, 0, 0);
    g.drawImage(this.bg, 0, 0);
    g.scale(dpr, dpr);
    var x = this.X(t);
    g.strokeStyle = "#111"; g.lineWidth = 1.2;
    g.beginPath(); g.moveTo(x, this.top); g.lineTo(x, this.h - this.bottom); g.stroke();
    var j = Math.min(i + 1, N - 1);
    this.spec.series.forEach(function (s, k) {
      var y0 = s.y[i], y1 = s.y[j];
      var val = (y0 === null || y1 === null) ? null : y0 + a * (y1 - y0);
      var txt = s.name + " = " + fmt(val, s.unit);
      var node = this.spans[k].lastChild;
      if (node.nodeValue !== txt) node.nodeValue = txt;
    }, this);
  };
  var plots = [];
  if (D.plots.length) {
    $("side").hidden = false;
    plots = D.plots.map(function (p) { return new Plot(p, $("side")); });
  }

  // -- the 3D scene --------------------------------------------------------------------
  var view = $("view");
  var renderer = null;
  try {
    renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  } catch (err) {
    var msg = $("message");
    msg.hidden = false;
    msg.textContent = "WebGL is not available in this browser, so the 3D view cannot be " +
      "drawn (" + (err && err.message ? err.message : err) + "). The plots and controls work.";
  }
  var E = D.extent, S = D.sizes;
  var UP = v3(D.up), CENTER = v3(D.center);
  var scene = new THREE.Scene();
  scene.background = new THREE.Color(0xf4f5f7);
  var camera = new THREE.PerspectiveCamera(40, 1, E * 1e-3, E * 200);
  camera.up.copy(UP);
  camera.position.copy(v3(D.camera));
  scene.add(camera);
  scene.add(new THREE.AmbientLight(0xffffff, 0.9));
  var hemi = new THREE.HemisphereLight(0xffffff, 0x8a8f99, 0.9);
  hemi.position.copy(UP);
  scene.add(hemi);
  var sun = new THREE.DirectionalLight(0xffffff, 1.6);
  sun.position.set(0.4, 0.6, 1.0);          // in camera coordinates: lit from the viewer
  camera.add(sun);
  camera.add(sun.target);
  sun.target.position.set(0, 0, -1);
  var controls = null;
  if (renderer) {
    renderer.setPixelRatio(window.devicePixelRatio || 1);
    view.insertBefore(renderer.domElement, view.firstChild);
    controls = new THREE.OrbitControls(camera, renderer.domElement);
    controls.target.copy(CENTER);
    controls.screenSpacePanning = true;
    controls.update();
    controls.saveState();
  }

  var layers = { traces: [], reactions: [], joints: [], labels: [], grid: [], contacts: [] };
  var Y_AXIS = new THREE.Vector3(0, 1, 0);

  function label(text, color, height) {
    var c = document.createElement("canvas"), g = c.getContext("2d");
    var fs = 44, font = "600 " + fs + "px sans-serif";
    g.font = font;
    var w = Math.ceil(g.measureText(text).width) + 16;
    c.width = w; c.height = fs + 14;
    g.font = font;
    g.fillStyle = "rgba(255,255,255,0.78)";
    g.fillRect(0, 0, w, c.height);
    g.fillStyle = color; g.textBaseline = "middle";
    g.fillText(text, 8, c.height / 2 + 1);
    var tex = new THREE.CanvasTexture(c);
    tex.colorSpace = THREE.SRGBColorSpace;
    var sprite = new THREE.Sprite(new THREE.SpriteMaterial({ map: tex, depthTest: false, transparent: true }));
    sprite.scale.set(height * w / c.height, height, 1);
    sprite.center.set(0, 0);
    sprite.renderOrder = 10;
    layers.labels.push(sprite);
    return sprite;
  }
  function material(color, opts) {
    var m = new THREE.MeshStandardMaterial({ color: color, roughness: 0.55, metalness: 0.05 });
    if (opts) Object.keys(opts).forEach(function (k) { m[k] = opts[k]; });
    return m;
  }
  // a cylinder (radius r) from a to b
  function rod(a, b, r, mat) {
    var d = new THREE.Vector3().subVectors(b, a), len = d.length();
    var mesh = new THREE.Mesh(new THREE.CylinderGeometry(r, r, Math.max(len, 1e-9), 14), mat);
    mesh.position.addVectors(a, b).multiplyScalar(0.5);
    if (len > 0) mesh.quaternion.setFromUnitVectors(Y_AXIS, d.normalize());
    return mesh;
  }
  // a group placed by a rotation (3x3, row-major) and an offset, in its parent's frame
  function posed(R, o) {
    var holder = new THREE.Group();
    holder.matrixAutoUpdate = false;
    holder.matrix.set(R[0], R[1], R[2], o[0], R[3], R[4], R[5], o[1], R[6], R[7], R[8], o[2], 0, 0, 0, 1);
    return holder;
  }
  function arrow(dir, origin, length, color) {
    var head = Math.min(S.head * 1.6, 0.35 * length);
    return new THREE.ArrowHelper(dir.clone().normalize(), origin, length, color, head, 0.55 * head);
  }

  // the global frame, gravity and the grid
  var axisLen = 0.16 * E;
  [[1, 0, 0, 0xe03131, "X"], [0, 1, 0, 0x2f9e44, "Y"], [0, 0, 1, 0x1c64d1, "Z"]].forEach(function (a) {
    var dir = new THREE.Vector3(a[0], a[1], a[2]);
    scene.add(arrow(dir, new THREE.Vector3(), axisLen, a[3]));
    var l = label(a[4], "#" + a[3].toString(16).padStart(6, "0"), S.label);
    l.position.copy(dir).multiplyScalar(axisLen * 1.05);
    scene.add(l);
  });
  var grid = new THREE.GridHelper(D.grid.size, D.grid.divisions, 0xb8bec8, 0xd9dde3);
  grid.quaternion.setFromUnitVectors(Y_AXIS, UP);
  grid.position.copy(v3(D.grid.origin));
  scene.add(grid);
  layers.grid.push(grid);
  var side = new THREE.Vector3().crossVectors(UP, v3(D.camera).sub(CENTER)).normalize();
  var legendSpot = CENTER.clone().addScaledVector(side, -0.36 * E).addScaledVector(UP, 0.3 * E);
  if (D.g > 0) {
    var gdir = v3(D.gravity).normalize();
    scene.add(arrow(gdir, legendSpot.clone(), 0.18 * E, 0x444444));
    var gl = label("g", "#333", S.label);
    gl.position.copy(legendSpot).addScaledVector(gdir, 0.1 * E).addScaledVector(side, 0.015 * E);
    scene.add(gl);
  }
  if (D.force_scale) {       // the reference arrow: force_ref newtons
    var refOrigin = legendSpot.clone().addScaledVector(side, 0.1 * E).addScaledVector(UP, -0.18 * E);
    var refLen = D.force_ref * D.force_scale;
    var ref = arrow(side.clone(), refOrigin, refLen, 0xc2255c);
    scene.add(ref);
    layers.reactions.push(ref);
    var rl = label(fmt(D.force_ref, "N"), "#c2255c", S.label);
    rl.position.copy(refOrigin).addScaledVector(UP, 0.02 * E);
    scene.add(rl);
    layers.reactions.push(rl);
  }

  // bodies: a group per body, posed each frame; shapes, links and markers inside
  var groups = {};
  groups[D.ground] = scene;
  var bodies = D.bodies.map(function (b) {
    var g = new THREE.Group();
    g.name = b.name;
    var s = b.shape, geo;
    if (s.kind === "box") geo = new THREE.BoxGeometry(s.dims[0], s.dims[1], s.dims[2]);
    else if (s.kind === "sphere") geo = new THREE.SphereGeometry(s.dims[0], 32, 16);
    else { geo = new THREE.CylinderGeometry(s.dims[0], s.dims[0], s.dims[1], 32); geo.rotateX(Math.PI / 2); }
    var holder = posed(s.R, s.offset);
    var color = new THREE.Color(b.color);
    if (!b.covered) {        // a body with collision shapes is drawn by them alone
      holder.add(new THREE.Mesh(geo, material(color)));
      holder.add(new THREE.LineSegments(new THREE.EdgesGeometry(geo, 20),
        new THREE.LineBasicMaterial({ color: color.clone().multiplyScalar(0.55) })));
    }
    g.add(holder);
    var linkMat = material(color.clone().multiplyScalar(0.8));
    b.links.forEach(function (p) { g.add(rod(new THREE.Vector3(), v3(p), S.link, linkMat)); });
    var l = label(b.name, b.color, S.label);
    var top = 0.5 * Math.max.apply(null, s.kind === "box" ? s.dims : [2 * s.dims[0]]);
    l.position.set(0, 0, 0).addScaledVector(UP, 0).add(new THREE.Vector3(top, top, top));
    g.add(l);
    scene.add(g);
    groups[b.name] = g;
    return { data: b, group: g };
  });
  function groupOf(name) { return groups[name] || scene; }

  // collision shapes, in their bodies' groups: every shape as its surface's triangles
  // (Shape.surface, whatever its kind), a ground plane as a square patch under the
  // scene's centre, D.plane_size wide
  (D.collision || []).forEach(function (c) {
    var holder = posed(c.R, c.offset), pos = c.vertices, idx = c.faces;
    var color = new THREE.Color(c.color);
    if (c.kind === "plane") {
      var h = 0.5 * D.plane_size, u = 0, w = 0;
      if (c.body === D.ground) {     // the scene's centre, projected on the plane
        var R = c.R, d = CENTER.clone().sub(v3(c.offset));
        u = R[0] * d.x + R[3] * d.y + R[6] * d.z; w = R[1] * d.x + R[4] * d.y + R[7] * d.z;
      }
      pos = [u - h, w - h, 0, u + h, w - h, 0, u + h, w + h, 0, u - h, w + h, 0];
      idx = [0, 1, 2, 0, 2, 3];
    }
    var geo = new THREE.BufferGeometry();
    geo.setAttribute("position", new THREE.Float32BufferAttribute(pos, 3));
    geo.setIndex(idx);
    geo.computeVertexNormals();
    var opts = c.kind === "plane" ? { transparent: true, opacity: 0.35, side: THREE.DoubleSide,
                                      depthWrite: false } : { side: THREE.DoubleSide };
    holder.add(new THREE.Mesh(geo, material(color, opts)));
    if (c.kind !== "plane") {   // edges where faces meet at more than 20 degrees
      holder.add(new THREE.LineSegments(new THREE.EdgesGeometry(geo, 20),
        new THREE.LineBasicMaterial({ color: color.clone().multiplyScalar(0.55) })));
    }
    groupOf(c.body).add(holder);
  });

  // contact forces: per pair, a marker at the centre of pressure and two arrows
  var contactArrows = (D.contact_scale ? D.contacts || [] : []).map(function (c) {
    var dot = new THREE.Mesh(new THREE.SphereGeometry(0.6 * S.joint, 12, 8), material(0x212529));
    var nArrow = arrow(new THREE.Vector3(0, 0, 1), new THREE.Vector3(), 1, 0x0b7285);
    var fArrow = arrow(new THREE.Vector3(1, 0, 0), new THREE.Vector3(), 1, 0xe8590c);
    [dot, nArrow.line, nArrow.cone, fArrow.line, fArrow.cone].forEach(function (o) {
      o.material.depthTest = false;        // seen through the bodies they push
      o.renderOrder = 5;
    });
    [dot, nArrow, fArrow].forEach(function (o) { o.visible = false; scene.add(o); layers.contacts.push(o); });
    return { data: c, dot: dot, normal: nArrow, friction: fArrow };
  });

  // joints: markers on the parent (hinge, guide) and the child (collar, ball), axis arrows
  var jointMat = material(0x4a4f57), guideMat = material(0x9aa0a8);
  var reactionArrows = [];
  D.joints.forEach(function (j) {
    var parent = groupOf(j.parent), child = groupOf(j.child);
    var P = v3(j.P), Q = v3(j.Q), r = S.joint;
    var parts = [];
    if (j.type === "revolute" && j.axis_parent) {
      var ax = v3(j.axis_parent).normalize();
      parts.push([parent, rod(P.clone().addScaledVector(ax, -1.6 * r), P.clone().addScaledVector(ax, 1.6 * r), r, jointMat)]);
      parts.push([parent, arrow(ax, P.clone().addScaledVector(ax, 1.6 * r), S.axis, 0x343a40)]);
    } else if (j.type === "prismatic" && j.axis_parent) {
      var axp = v3(j.axis_parent).normalize(), gd = j.guide || [-0.1 * E, 0.1 * E];
      parts.push([parent, rod(P.clone().addScaledVector(axp, gd[0]), P.clone().addScaledVector(axp, gd[1]), 0.55 * r, guideMat)]);
      parts.push([parent, arrow(axp, P.clone().addScaledVector(axp, gd[1]), S.axis * 0.8, 0x343a40)]);
      var axc = v3(j.axis_child || j.axis_parent).normalize();
      parts.push([child, rod(Q.clone().addScaledVector(axc, -1.4 * r), Q.clone().addScaledVector(axc, 1.4 * r), 1.15 * r, jointMat)]);
    } else if (j.type === "spherical") {
      var ball = new THREE.Mesh(new THREE.SphereGeometry(1.3 * r, 20, 12), jointMat);
      ball.position.copy(Q);
      parts.push([child, ball]);
    } else {
      var cube = new THREE.Mesh(new THREE.BoxGeometry(2 * r, 2 * r, 2 * r), jointMat);
      cube.position.copy(Q);
      parts.push([child, cube]);
    }
    var jl = label(j.name, "#343a40", S.label * 0.85);
    jl.position.copy(P).add(new THREE.Vector3(r, -r, r).multiplyScalar(1.5));
    parts.push([parent, jl]);
    parts.forEach(function (pc) { pc[0].add(pc[1]); layers.joints.push(pc[1]); });
    if (j.force && D.force_scale) {
      var a = arrow(new THREE.Vector3(1, 0, 0), new THREE.Vector3(), 1, 0xc2255c);
      a.visible = false;
      scene.add(a);
      layers.reactions.push(a);
      reactionArrows.push({ joint: j, arrow: a, child: j.child, Q: Q });
    }
  });

  // traces: the whole path faintly, the path so far solid
  var traces = D.traces.map(function (tr) {
    var pts = new Float32Array(tr.pts.length);
    for (var k = 0; k < pts.length; k++) pts[k] = tr.pts[k] === null ? NaN : tr.pts[k];
    var attr = new THREE.BufferAttribute(pts, 3);
    var full = new THREE.BufferGeometry(); full.setAttribute("position", attr);
    var done = new THREE.BufferGeometry(); done.setAttribute("position", attr);
    var faint = new THREE.Line(full, new THREE.LineBasicMaterial({ color: tr.color, transparent: true, opacity: 0.28 }));
    var solid = new THREE.Line(done, new THREE.LineBasicMaterial({ color: tr.color }));
    scene.add(faint); scene.add(solid);
    layers.traces.push(faint, solid);
    return { geometry: done, full: full };
  });

  // -- update to a time ------------------------------------------------------------------
  var tmpV = new THREE.Vector3(), tmpF = new THREE.Vector3();
  var bodyPose = {};
  function update(t) {
    var ia = locate(t), i = ia[0], a = ia[1];
    bodies.forEach(function (b) {
      lerp3(b.data.pos, i, a, b.group.position);
      slerp4(b.data.quat, i, a, b.group.quaternion);
      bodyPose[b.data.name] = b.group;
    });
    reactionArrows.forEach(function (ra) {
      var g = bodyPose[ra.child];
      if (!g) return;
      lerp3(ra.joint.force, i, a, tmpF);
      var f = tmpF.length(), len = f * D.force_scale;
      if (!(len > 1e-6 * E)) { ra.arrow.visible = false; return; }
      tmpV.copy(ra.Q).applyQuaternion(g.quaternion).add(g.position);
      ra.arrow.position.copy(tmpV);
      ra.arrow.setDirection(tmpF.normalize());
      var head = Math.min(S.head * 1.6, 0.35 * len);
      ra.arrow.setLength(len, head, 0.55 * head);
      ra.arrow.visible = $("show-reactions").checked;
    });
    contactArrows.forEach(function (ca) { drawContact(ca, i, a); });
    var upto = Math.min(a > 0.5 ? i + 2 : i + 1, I1 + 1);
    traces.forEach(function (tr) { tr.geometry.setDrawRange(I0, Math.max(upto - I0, 0)); });
    plots.forEach(function (p) { p.draw(t, i, a); });
    var slider = $("slider");
    if (document.activeElement !== slider || state.playing) slider.value = String(t);
    $("time").textContent = "t = " + (t - TOFF).toFixed(3) + " s / " + fmt(T1 - TOFF, "s");
  }

  // a contact's arrows at frame i + a: linear between output times; where the pair is in
  // contact at only one of the two, the nearer one's forces (none out of contact)
  var tmpP = new THREE.Vector3(), tmpN = new THREE.Vector3(), tmpT = new THREE.Vector3();
  function drawContact(ca, i, a) {
    var c = ca.data, j = Math.min(i + 1, N - 1), on = $("show-contacts").checked;
    var ok0 = c.point[3 * i] !== null, ok1 = c.point[3 * j] !== null, text = "", k, b;
    if (ok0 && ok1) { k = i; b = a; } else if (ok0 || ok1) { k = ok0 ? i : j; b = 0; }
    else k = -1;
    ca.dot.visible = false;
    [["normal", tmpN], ["friction", tmpT]].forEach(function (part) {
      var arr = ca[part[0]], v = part[1];
      arr.visible = false;
      arr.userData.vec = null;
      if (k < 0) return;
      lerp3(c[part[0]], k, b, v);
      var f = v.length(), len = f * D.contact_scale;
      text += (text ? ", " : c.pair + ": N = ") + (part[0] === "normal" ? fmt(f, "N") :
        "friction " + fmt(f, "N"));
      if (!(len > 1e-6 * E)) return;
      lerp3(c.point, k, b, tmpP);
      arr.position.copy(tmpP);
      arr.setDirection(v.clone().normalize());
      var head = Math.min(S.head * 1.6, 0.35 * len);
      arr.setLength(len, head, 0.55 * head);
      arr.visible = on;
      ca.dot.position.copy(tmpP);
      ca.dot.visible = on;
      // what is drawn, read back from the arrow: its direction times its length (m)
      var d = new THREE.Vector3(0, 1, 0).applyQuaternion(arr.quaternion).multiplyScalar(arr.cone.position.y);
      arr.userData.vec = [d.x, d.y, d.z];
    });
    var row = contactRows[c.pair];
    if (!row) return;
    if (row.lastChild.nodeValue !== (text || c.pair + ": no contact")) row.lastChild.nodeValue = text || c.pair + ": no contact";
    // for tests and scripts: each arrow's origin and vector (m), as drawn
    var show = function (o) { return o.userData.vec ? o.position.toArray().concat(o.userData.vec).map(function (x) { return x.toPrecision(9); }).join(",") : ""; };
    row.setAttribute("data-normal", show(ca.normal));
    row.setAttribute("data-friction", show(ca.friction));
  }

  // -- controls --------------------------------------------------------------------------
  function setPlaying(on) {
    state.playing = on && N > 1;
    $("play").innerHTML = state.playing ? "&#9646;&#9646;" : "&#9654;";
    last = null;
  }
  function setTime(t) { state.time = clamp(t, T0, T1); }
  var slider = $("slider");
  slider.min = String(T0); slider.max = String(N > 1 ? T1 : T0 + 1);
  slider.disabled = N < 2;
  slider.addEventListener("input", function () { setPlaying(false); setTime(parseFloat(slider.value)); });
  $("play").addEventListener("click", function () {
    if (!state.playing && state.time >= T1) state.time = T0;
    setPlaying(!state.playing);
  });
  $("restart").addEventListener("click", function () { setTime(T0); });
  var speedSel = $("speed");
  function showSpeed() {   // show the speed asked for even if it is not one of the options
    var v = String(state.speed), found = false;
    for (var k = 0; k < speedSel.options.length; k++) if (parseFloat(speedSel.options[k].value) === state.speed) { speedSel.selectedIndex = k; found = true; }
    if (!found) { var o = document.createElement("option"); o.value = v; o.textContent = fmt(state.speed) + "×"; speedSel.appendChild(o); speedSel.value = v; }
  }
  showSpeed();
  speedSel.addEventListener("change", function () { state.speed = parseFloat(speedSel.value); });
  $("loop").addEventListener("change", function () { state.loop = $("loop").checked; });
  function bindLayer(id, key) {
    var box = $(id);
    if (key === "reactions" && !reactionArrows.length) box.parentNode.hidden = true;
    if (key === "traces" && !traces.length) box.parentNode.hidden = true;
    if (key === "contacts" && !contactArrows.length) box.parentNode.hidden = true;
    box.addEventListener("change", function () {
      layers[key].forEach(function (o) { o.visible = box.checked; });
    });
  }
  bindLayer("show-traces", "traces");
  bindLayer("show-reactions", "reactions");
  bindLayer("show-contacts", "contacts");
  bindLayer("show-joints", "joints");
  bindLayer("show-labels", "labels");
  bindLayer("show-grid", "grid");
  $("reset-view").addEventListener("click", function () { if (controls) controls.reset(); });
  window.addEventListener("keydown", function (ev) {
    if (ev.target && (ev.target.tagName === "SELECT" || ev.target.tagName === "INPUT" && ev.target.type !== "range")) return;
    if (ev.key === " ") { ev.preventDefault(); $("play").click(); }
    else if (ev.key === "Home") { setTime(T0); }
    else if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
      ev.preventDefault(); setPlaying(false);
      var i = locate(state.time)[0] + (ev.key === "ArrowRight" ? 1 : 0);
      var k = clamp(ev.key === "ArrowRight" ? i + (T[i] <= state.time ? 1 : 0) : (T[i] < state.time ? i : i - 1), 0, N - 1);
      setTime(T[k]);
    }
  });

  function resize() {
    var w = view.clientWidth || 1, h = view.clientHeight || 1;
    if (renderer) renderer.setSize(w, h, false);
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
    plots.forEach(function (p) { p.bg = null; });
  }
  window.addEventListener("resize", resize);
  resize();

  // -- modes: pick one; the page then shows its stretch of the timeline ------------------
  var modeInfo = null;
  function selectMode(k) {
    var m = MODES[k];
    T0 = m.t0; T1 = m.t1; I0 = m.i0; I1 = m.i1; TOFF = m.t0;
    slider.min = String(T0); slider.max = String(T1);
    state.time = T0; state.speed = m.speed; showSpeed();
    traces.forEach(function (tr) { tr.full.setDrawRange(I0, I1 - I0 + 1); });
    plots.forEach(function (p) { p.bg = null; });
    modeInfo.firstChild.textContent = m.label;
    modeInfo.lastChild.textContent = "shape: " + m.shape;
    $("mode").value = String(k);
    document.documentElement.setAttribute("data-mode", String(k));
    last = null;
  }
  if (MODES.length) {
    var pick = document.createElement("label");
    pick.title = "which mode to show";
    pick.appendChild(textNode("mode "));
    var sel = document.createElement("select");
    sel.id = "mode";
    MODES.forEach(function (m, k) {
      var o = document.createElement("option");
      o.value = String(k);
      o.textContent = m.index + ": " + (m.kind === "rigid" ? "0 Hz (rigid)" :
        m.kind === "real" ? "no oscillation" : fmt(m.frequency_hz, "Hz"));
      sel.appendChild(o);
    });
    pick.appendChild(sel);
    $("controls").insertBefore(pick, $("controls").firstChild);
    modeInfo = document.createElement("div");
    modeInfo.className = "row";
    modeInfo.id = "mode-info";
    modeInfo.appendChild(document.createElement("div"));
    modeInfo.appendChild(document.createElement("div"));
    $("legend").insertBefore(modeInfo, $("legend").children[1] || null);
    sel.addEventListener("change", function () { selectMode(parseInt(sel.value, 10)); });
    selectMode(clamp(Math.round(num("mode", 0)), 0, MODES.length - 1));
    if (query.has("speed")) { state.speed = Math.max(num("speed", 1), 1e-6); showSpeed(); }
    if (query.has("t")) { state.time = clamp(TOFF + num("t", 0), T0, T1); state.playing = false; }
  }

  // -- the loop -----------------------------------------------------------------------------
  var last = null;
  setPlaying(state.playing);
  function tick(now) {
    if (state.playing) {
      if (last !== null) {
        state.time += (now - last) / 1000 * state.speed;
        if (state.time > T1) {
          if (state.loop) state.time = T0 + (state.time - T1) % Math.max(T1 - T0, 1e-12);
          else { state.time = T1; setPlaying(false); }
        }
      }
      last = now;
    }
    update(state.time);
    if (renderer) { if (controls) controls.update(); renderer.render(scene, camera); }
    requestAnimationFrame(tick);
  }
  update(state.time);
  if (renderer) renderer.render(scene, camera);
  requestAnimationFrame(tick);

  // for scripting and tests: window.animation.setTime(1.5), .play(), .pause(), .time()
  window.animation = {
    setTime: function (t) { setPlaying(false); setTime(t); },
    play: function () { setPlaying(true); }, pause: function () { setPlaying(false); },
    time: function () { return state.time - TOFF; }, three: D.three,
    mode: function (k) { if (MODES.length) selectMode(k); }, modes: MODES.length,
  };
  document.documentElement.setAttribute("data-ready", renderer ? "webgl" : "no-webgl");
})();
