// The parts of three.js the animation page uses, bundled into one classic script that
// defines the global THREE (see README.md next to the bundle).
export {
  AmbientLight, ArrowHelper, AxesHelper, BoxGeometry, BufferAttribute, BufferGeometry,
  CanvasTexture, Color, ConeGeometry, CylinderGeometry, DirectionalLight, DoubleSide,
  EdgesGeometry, Float32BufferAttribute, GridHelper, Group, HemisphereLight, Line,
  LineBasicMaterial, LineDashedMaterial, LineSegments, MathUtils, Matrix3, Matrix4, Mesh,
  MeshBasicMaterial, MeshLambertMaterial, MeshPhongMaterial, MeshStandardMaterial,
  PerspectiveCamera, Quaternion, REVISION, Scene, SphereGeometry, Sprite, SpriteMaterial,
  SRGBColorSpace, TorusGeometry, Vector3, WebGLRenderer,
} from "three";
export { OrbitControls } from "three/examples/jsm/controls/OrbitControls.js";
