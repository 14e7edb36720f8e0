/* The element library's program in C (elements/kernels/compiled.py: program, frames, rates and
   the kernels sandwich, point_gap, revolute_gap, slide_gap, orientation_gap,
   prismatic_rotation, axes_cross, axes_dot, axes_combination, screw_gap, gimbal_rate,
   gap_row, gap_length),
   for an exported FMU (bondgraph/fmu/c/bg_fused.h declares
   bg_program). The same sums in the same order as the compiled Python. The quaternion
   formulas (bg_quat_matrix_entries, bg_body_rate_entries) are written before this text
   from bondgraph/spatial.py (elements/kernels/compiled_c.py). Stacks are row-major: A (n + 1,
   3, 3) with the ground in row 0, r, w, v (n + 1, 3). */

enum { SANDWICH, POINT_GAP, REVOLUTE_GAP, SLIDE_GAP, ORIENTATION_GAP, PRISMATIC_ROTATION,
       AXES_CROSS, AXES_DOT, AXES_COMBINATION, SCREW_GAP, GIMBAL_RATE, GAP_ROW, GAP_LENGTH };
enum { D_CODE, D_N, D_TARGET, D_SIGN, D_K, D_IA, D_IB, D_DEST, D_NROW, D_NCOL, D_F0, D_F1,
       D_F2, D_FORM, D_COLUMNS };

#define M3(a, b, i, j) ((a)[((b) * 3 + (i)) * 3 + (j)])
#define V3(a, b, i) ((a)[(b) * 3 + (i)])

static void sandwich(const double *A, const double *Adot, int rate, int64_t n,
                     const int64_t *ia, const int64_t *ib, const double *L, const double *R,
                     const int64_t *nrow, const int64_t *ncol, const int64_t *form,
                     const int64_t *dest, double sign, double *out) {
    double M[3][3], T[3][3];
    for (int64_t i = 0; i < n; i++) {
        int64_t x = ia[i], y = ib[i];
        const double *P = rate ? Adot : A;
        if (x == 0) {
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) M[a][b] = M3(P, y, a, b);
        } else if (y == 0) {
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) M[a][b] = M3(P, x, b, a);
        } else if (rate) {
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++)
                    M[a][b] = (M3(Adot, x, 0, a) * M3(A, y, 0, b) +
                               M3(A, x, 0, a) * M3(Adot, y, 0, b)) +
                              (M3(Adot, x, 1, a) * M3(A, y, 1, b) +
                               M3(A, x, 1, a) * M3(Adot, y, 1, b)) +
                              (M3(Adot, x, 2, a) * M3(A, y, 2, b) +
                               M3(A, x, 2, a) * M3(Adot, y, 2, b));
        } else {
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++)
                    M[a][b] = M3(A, x, 0, a) * M3(A, y, 0, b) +
                              M3(A, x, 1, a) * M3(A, y, 1, b) +
                              M3(A, x, 2, a) * M3(A, y, 2, b);
        }
        int64_t f = form[i];
        if (f & 2) {
            for (int a = 0; a < 3; a++)
                for (int c = 0; c < 3; c++) T[a][c] = M[a][c];
        } else {
            for (int a = 0; a < 3; a++)
                for (int c = 0; c < 3; c++)
                    T[a][c] = M[a][0] * M3(R, i, 0, c) + M[a][1] * M3(R, i, 1, c) +
                              M[a][2] * M3(R, i, 2, c);
        }
        int64_t nc = ncol[i];
        const int64_t *d = dest + 9 * i;
        if (f & 1) {
            for (int r = 0; r < 3; r++)
                for (int64_t c = 0; c < nc; c++) out[d[r * nc + c]] = sign * T[r][c];
        } else {
            for (int64_t r = 0; r < nrow[i]; r++)
                for (int64_t c = 0; c < nc; c++)
                    out[d[r * nc + c]] = sign * (M3(L, i, r, 0) * T[0][c] +
                                                 M3(L, i, r, 1) * T[1][c] +
                                                 M3(L, i, r, 2) * T[2][c]);
        }
    }
}

static void point_gap(const double *A, const double *r, int64_t n, const int64_t *ia,
                      const int64_t *ib, const double *P, const double *Q,
                      const int64_t *dest, double sign, double *out) {
    for (int64_t i = 0; i < n; i++) {
        int64_t a = ia[i], b = ib[i];
        for (int k = 0; k < 3; k++) {
            double pa = V3(r, a, k) + (M3(A, a, k, 0) * V3(P, i, 0) +
                                       M3(A, a, k, 1) * V3(P, i, 1) +
                                       M3(A, a, k, 2) * V3(P, i, 2));
            double pb = V3(r, b, k) + (M3(A, b, k, 0) * V3(Q, i, 0) +
                                       M3(A, b, k, 1) * V3(Q, i, 1) +
                                       M3(A, b, k, 2) * V3(Q, i, 2));
            out[dest[3 * i + k]] = sign * (pa - pb);
        }
    }
}

static void revolute_gap(const double *A, int64_t n, const int64_t *ia, const int64_t *ib,
                         const double *ax, const double *D, const int64_t *dest, double sign,
                         double *out) {
    for (int64_t i = 0; i < n; i++) {
        int64_t a = ia[i], b = ib[i];
        double s0 = 0.0, s1 = 0.0;
        const double *Di = D + 6 * i;          /* (3, 2) */
        for (int k = 0; k < 3; k++) {
            double ak = M3(A, a, k, 0) * V3(ax, i, 0) + M3(A, a, k, 1) * V3(ax, i, 1) +
                        M3(A, a, k, 2) * V3(ax, i, 2);
            double d0 = M3(A, b, k, 0) * Di[0] + M3(A, b, k, 1) * Di[2] +
                        M3(A, b, k, 2) * Di[4];
            double d1 = M3(A, b, k, 0) * Di[1] + M3(A, b, k, 1) * Di[3] +
                        M3(A, b, k, 2) * Di[5];
            s0 += ak * d0;
            s1 += ak * d1;
        }
        out[dest[2 * i]] = sign * -s1;
        out[dest[2 * i + 1]] = sign * s0;
    }
}

static void gap3(const double *A, const double *r, int64_t a, int64_t b, const double *P,
                 const double *Q, int64_t i, double h[3]) {
    for (int k = 0; k < 3; k++)
        h[k] = (V3(r, a, k) + (M3(A, a, k, 0) * V3(P, i, 0) + M3(A, a, k, 1) * V3(P, i, 1) +
                               M3(A, a, k, 2) * V3(P, i, 2))) -
               (V3(r, b, k) + (M3(A, b, k, 0) * V3(Q, i, 0) + M3(A, b, k, 1) * V3(Q, i, 1) +
                               M3(A, b, k, 2) * V3(Q, i, 2)));
}

/* dh/dt = (v_a + A_a (w_a x P_i)) - (v_b + A_b (w_b x Q_i)), w in body axes */
static void gap_rate3(const double *A, const double *w, const double *v, int64_t a,
                      int64_t b, const double *P, const double *Q, int64_t i, double dh[3]) {
    double cp[3], cq[3];
    cp[0] = V3(w, a, 1) * V3(P, i, 2) - V3(w, a, 2) * V3(P, i, 1);
    cp[1] = V3(w, a, 2) * V3(P, i, 0) - V3(w, a, 0) * V3(P, i, 2);
    cp[2] = V3(w, a, 0) * V3(P, i, 1) - V3(w, a, 1) * V3(P, i, 0);
    cq[0] = V3(w, b, 1) * V3(Q, i, 2) - V3(w, b, 2) * V3(Q, i, 1);
    cq[1] = V3(w, b, 2) * V3(Q, i, 0) - V3(w, b, 0) * V3(Q, i, 2);
    cq[2] = V3(w, b, 0) * V3(Q, i, 1) - V3(w, b, 1) * V3(Q, i, 0);
    for (int k = 0; k < 3; k++)
        dh[k] = (V3(v, a, k) + (M3(A, a, k, 0) * cp[0] + M3(A, a, k, 1) * cp[1] +
                                M3(A, a, k, 2) * cp[2])) -
                (V3(v, b, k) + (M3(A, b, k, 0) * cq[0] + M3(A, b, k, 1) * cq[1] +
                                M3(A, b, k, 2) * cq[2]));
}

static void prismatic_rotation(const double *A, const double *r, const double *w,
                               const double *v, int rate, int64_t n, const int64_t *ia,
                               const int64_t *ib, int64_t K, const double *D, const double *P,
                               const double *Q, const int64_t *dest, double sign,
                               double *out) {
    double u[3], du[3], h[3], x0, x1, x2;
    for (int64_t i = 0; i < n; i++) {
        int64_t a = ia[i], b = ib[i];
        gap3(A, r, a, b, P, Q, i, h);
        for (int k = 0; k < 3; k++)
            u[k] = V3(Q, i, k) + (M3(A, b, 0, k) * h[0] + M3(A, b, 1, k) * h[1] +
                                  M3(A, b, 2, k) * h[2]);
        if (rate) {
            double dh[3];
            gap_rate3(A, w, v, a, b, P, Q, i, dh);
            double e0 = u[0] - V3(Q, i, 0), e1 = u[1] - V3(Q, i, 1), e2 = u[2] - V3(Q, i, 2);
            double c0 = V3(w, b, 1) * e2 - V3(w, b, 2) * e1;
            double c1 = V3(w, b, 2) * e0 - V3(w, b, 0) * e2;
            double c2 = V3(w, b, 0) * e1 - V3(w, b, 1) * e0;
            for (int k = 0; k < 3; k++)
                du[k] = M3(A, b, 0, k) * dh[0] + M3(A, b, 1, k) * dh[1] + M3(A, b, 2, k) * dh[2];
            du[0] -= c0;
            du[1] -= c1;
            du[2] -= c2;
            x0 = du[0];
            x1 = du[1];
            x2 = du[2];
        } else {
            x0 = u[0];
            x1 = u[1];
            x2 = u[2];
        }
        const double *Di = D + 3 * K * i;      /* (3, K) */
        for (int64_t row = 0; row < K; row++) {
            double d0 = Di[row], d1 = Di[K + row], d2 = Di[2 * K + row];
            out[dest[3 * K * i + 3 * row + 0]] = sign * (d1 * x2 - d2 * x1);
            out[dest[3 * K * i + 3 * row + 1]] = sign * (-d0 * x2 + d2 * x0);
            out[dest[3 * K * i + 3 * row + 2]] = sign * (d0 * x1 - d1 * x0);
        }
    }
}

static void gap_row(const double *A, const double *r, const double *w, const double *v,
                    int rate, int64_t n, const int64_t *ia, const int64_t *ib,
                    const double *P, const double *Q, const double *scale,
                    const int64_t *dest, double sign, double *out) {
    double h[3];
    for (int64_t i = 0; i < n; i++) {
        int64_t a = ia[i], b = ib[i];
        if (rate) {
            gap_rate3(A, w, v, a, b, P, Q, i, h);
        } else {
            gap3(A, r, a, b, P, Q, i, h);
        }
        for (int k = 0; k < 3; k++) out[dest[3 * i + k]] = sign * (scale[i] * h[k]);
    }
}

static void gap_length(const double *A, const double *r, int64_t n, const int64_t *ia,
                       const int64_t *ib, const double *P, const double *Q, const double *d,
                       const int64_t *dest, double sign, double *out) {
    double h[3];
    for (int64_t i = 0; i < n; i++) {
        gap3(A, r, ia[i], ib[i], P, Q, i, h);
        double di = d[i];
        out[dest[i]] = sign * (((h[0] * h[0] + h[1] * h[1]) + h[2] * h[2] - di * di) /
                               (2.0 * di));
    }
}

static void slide_gap(const double *A, const double *r, int64_t n, const int64_t *ia,
                      const int64_t *ib, int64_t K, const double *D, const double *P,
                      const double *Q, const int64_t *dest, double sign, double *out) {
    double h[3];
    for (int64_t i = 0; i < n; i++) {
        int64_t a = ia[i], b = ib[i];
        gap3(A, r, a, b, P, Q, i, h);
        const double *Di = D + 3 * K * i;
        for (int64_t row = 0; row < K; row++) {
            double s = 0.0;
            for (int m = 0; m < 3; m++)
                s += Di[m * K + row] * (M3(A, b, 0, m) * h[0] + M3(A, b, 1, m) * h[1] +
                                        M3(A, b, 2, m) * h[2]);
            out[dest[K * i + row]] = sign * s;
        }
    }
}

static void orientation_gap(const double *A, int64_t n, const int64_t *ia, const int64_t *ib,
                            const double *C, const int64_t *dest, double sign, double *out) {
    double M[3][3], T[3][3];
    for (int64_t i = 0; i < n; i++) {
        int64_t a = ia[i], b = ib[i];
        for (int p = 0; p < 3; p++)
            for (int q = 0; q < 3; q++)
                T[p][q] = M3(A, a, p, 0) * M3(C, i, 0, q) + M3(A, a, p, 1) * M3(C, i, 1, q) +
                          M3(A, a, p, 2) * M3(C, i, 2, q);
        for (int p = 0; p < 3; p++)
            for (int q = 0; q < 3; q++)
                M[p][q] = T[p][0] * M3(A, b, q, 0) + T[p][1] * M3(A, b, q, 1) +
                          T[p][2] * M3(A, b, q, 2);
        out[dest[3 * i]] = sign * 0.5 * (M[2][1] - M[1][2]);
        out[dest[3 * i + 1]] = sign * 0.5 * (M[0][2] - M[2][0]);
        out[dest[3 * i + 2]] = sign * 0.5 * (M[1][0] - M[0][1]);
    }
}

/* universal, gimbal and screw joints: A_x u, A_x^T w and a x b as in compiled.py */
static void mv3(const double *A, int64_t x, double u0, double u1, double u2, double o[3]) {
    o[0] = M3(A, x, 0, 0) * u0 + M3(A, x, 0, 1) * u1 + M3(A, x, 0, 2) * u2;
    o[1] = M3(A, x, 1, 0) * u0 + M3(A, x, 1, 1) * u1 + M3(A, x, 1, 2) * u2;
    o[2] = M3(A, x, 2, 0) * u0 + M3(A, x, 2, 1) * u1 + M3(A, x, 2, 2) * u2;
}

static void mtv3(const double *A, int64_t x, double w0, double w1, double w2, double o[3]) {
    o[0] = M3(A, x, 0, 0) * w0 + M3(A, x, 1, 0) * w1 + M3(A, x, 2, 0) * w2;
    o[1] = M3(A, x, 0, 1) * w0 + M3(A, x, 1, 1) * w1 + M3(A, x, 2, 1) * w2;
    o[2] = M3(A, x, 0, 2) * w0 + M3(A, x, 1, 2) * w1 + M3(A, x, 2, 2) * w2;
}

static void cross3(const double a[3], const double b[3], double o[3]) {
    o[0] = a[1] * b[2] - a[2] * b[1];
    o[1] = a[2] * b[0] - a[0] * b[2];
    o[2] = a[0] * b[1] - a[1] * b[0];
}

static void axes_cross(const double *A, const double *Adot, int rate, int64_t n,
                       const int64_t *ia, const int64_t *ib, const double *u, const double *v,
                       const double *flags, const int64_t *dest, double sign, double *out) {
    double ug[3], vg[3], w[3], o[3];
    for (int64_t i = 0; i < n; i++) {
        int64_t a = ia[i], b = ib[i];
        int64_t x = flags[2 * i] > 0.5 ? b : a;
        mv3(A, a, V3(u, i, 0), V3(u, i, 1), V3(u, i, 2), ug);
        mv3(A, b, V3(v, i, 0), V3(v, i, 1), V3(v, i, 2), vg);
        cross3(ug, vg, w);
        if (rate) {
            double du[3], dv[3], c[3], e[3], p[3], q[3];
            mv3(Adot, a, V3(u, i, 0), V3(u, i, 1), V3(u, i, 2), du);
            mv3(Adot, b, V3(v, i, 0), V3(v, i, 1), V3(v, i, 2), dv);
            cross3(du, vg, c);
            cross3(ug, dv, e);
            mtv3(A, x, c[0] + e[0], c[1] + e[1], c[2] + e[2], p);
            mtv3(Adot, x, w[0], w[1], w[2], q);
            for (int k = 0; k < 3; k++) o[k] = p[k] + q[k];
        } else {
            mtv3(A, x, w[0], w[1], w[2], o);
        }
        double s = flags[2 * i + 1];
        for (int k = 0; k < 3; k++) out[dest[3 * i + k]] = sign * (s * o[k]);
    }
}

static void axes_dot(const double *A, int64_t n, const int64_t *ia, const int64_t *ib,
                     const double *u, const double *v, const double *c, const int64_t *dest,
                     double sign, double *out) {
    double ug[3], vg[3];
    for (int64_t i = 0; i < n; i++) {
        mv3(A, ia[i], V3(u, i, 0), V3(u, i, 1), V3(u, i, 2), ug);
        mv3(A, ib[i], V3(v, i, 0), V3(v, i, 1), V3(v, i, 2), vg);
        out[dest[i]] = sign * ((ug[0] * vg[0] + ug[1] * vg[1] + ug[2] * vg[2]) - c[i]);
    }
}

static void axes_combination(const double *A, const double *Adot, int rate, int64_t n,
                             const int64_t *ia, const int64_t *ib, const double *u,
                             const double *v, const double *flags, const int64_t *dest,
                             double sign, double *out) {
    double ug[3], vg[3], w[3], o[3];
    for (int64_t i = 0; i < n; i++) {
        int64_t a = ia[i], b = ib[i];
        const double *fl = flags + 4 * i;
        double al = fl[0], be = fl[1];
        int64_t x = fl[2] > 0.5 ? b : a;
        mv3(A, a, V3(u, i, 0), V3(u, i, 1), V3(u, i, 2), ug);
        mv3(A, b, V3(v, i, 0), V3(v, i, 1), V3(v, i, 2), vg);
        for (int k = 0; k < 3; k++) w[k] = al * ug[k] + be * vg[k];
        if (rate) {
            double du[3], dv[3], p[3], q[3];
            mv3(Adot, a, V3(u, i, 0), V3(u, i, 1), V3(u, i, 2), du);
            mv3(Adot, b, V3(v, i, 0), V3(v, i, 1), V3(v, i, 2), dv);
            mtv3(A, x, al * du[0] + be * dv[0], al * du[1] + be * dv[1],
                 al * du[2] + be * dv[2], p);
            mtv3(Adot, x, w[0], w[1], w[2], q);
            for (int k = 0; k < 3; k++) o[k] = p[k] + q[k];
        } else {
            mtv3(A, x, w[0], w[1], w[2], o);
        }
        for (int k = 0; k < 3; k++) out[dest[3 * i + k]] = sign * (fl[3] * o[k]);
    }
}

/* F, R0 (n x 3 x 3), P, Q (n x 3), pitch (n) one after another from F */
static void screw_gap(const double *A, const double *r, int64_t n, const int64_t *ia,
                      const int64_t *ib, const double *F, const int64_t *dest, double sign,
                      double *out) {
    const double *R0 = F + 9 * n, *P = R0 + 9 * n, *Q = P + 3 * n, *pitch = Q + 3 * n;
    const double two_pi = 2.0 * 3.14159265358979311600;     /* 2.0 * numpy.pi */
    double h[3], g[3], X1[3], X2[3], X3[3], X4[2];
    for (int64_t i = 0; i < n; i++) {
        int64_t a = ia[i], b = ib[i];
        gap3(A, r, a, b, P, Q, i, h);
        mv3(A, a, M3(F, i, 0, 2), M3(F, i, 1, 2), M3(F, i, 2, 2), g);
        double s = g[0] * -h[0] + g[1] * -h[1] + g[2] * -h[2];
        for (int row = 0; row < 2; row++) {
            for (int j = 0; j < 3; j++)
                X1[j] = M3(F, i, 0, row) * M3(A, a, j, 0) + M3(F, i, 1, row) * M3(A, a, j, 1) +
                        M3(F, i, 2, row) * M3(A, a, j, 2);
            for (int j = 0; j < 3; j++)
                X2[j] = X1[0] * M3(A, b, 0, j) + X1[1] * M3(A, b, 1, j) + X1[2] * M3(A, b, 2, j);
            for (int j = 0; j < 3; j++)
                X3[j] = X2[0] * M3(R0, i, j, 0) + X2[1] * M3(R0, i, j, 1) +
                        X2[2] * M3(R0, i, j, 2);
            X4[row] = X3[0] * M3(F, i, 0, 0) + X3[1] * M3(F, i, 1, 0) + X3[2] * M3(F, i, 2, 0);
        }
        double theta = atan2(X4[1], X4[0]);
        double p = pitch[i];
        double raw = s - p * theta;
        double turn = two_pi * p;
        double k = turn != 0.0 ? nearbyint(raw / turn) : 0.0;   /* half to even */
        out[dest[i]] = sign * (raw - k * turn);
    }
}

/* flags (n x 5): k, which, sign, s, lock; an instance in gimbal lock (|a1 x u3| below
   lock) writes NaN, which the fused engine reports (a joint term that is not finite) */
static void gimbal_rate(const double *A, const double *Adot, int rate, int64_t n,
                        const int64_t *ia, const int64_t *ib, const double *u,
                        const double *v, const double *flags, const int64_t *dest,
                        double sign, double *out) {
    double a1[3], u3[3], c[3], rr[3], e[3], o[3];
    for (int64_t i = 0; i < n; i++) {
        int64_t a = ia[i], b = ib[i];
        const double *fl = flags + 5 * i;
        mv3(A, a, V3(u, i, 0), V3(u, i, 1), V3(u, i, 2), a1);
        mv3(A, b, V3(v, i, 0), V3(v, i, 1), V3(v, i, 2), u3);
        double d = a1[0] * u3[0] + a1[1] * u3[1] + a1[2] * u3[2];
        cross3(a1, u3, c);
        double n2 = 1.0 - d * d;
        double nn = sqrt(n2 > 0.0 ? n2 : 0.0);
        if (nn < fl[4]) {
            for (int k = 0; k < 3; k++) out[dest[3 * i + k]] = NAN;
            continue;
        }
        double kk = fl[0], s = fl[3];
        int64_t x = fl[1] > 0.5 ? b : a;
        for (int k = 0; k < 3; k++) {
            if (kk < 0.5) rr[k] = (a1[k] - d * u3[k]) / n2;
            else if (kk < 1.5) rr[k] = s * c[k] / nn;
            else rr[k] = (u3[k] - d * a1[k]) / n2;
        }
        if (rate) {
            double da[3], dw[3], p[3], q[3];
            mv3(Adot, a, V3(u, i, 0), V3(u, i, 1), V3(u, i, 2), da);
            mv3(Adot, b, V3(v, i, 0), V3(v, i, 1), V3(v, i, 2), dw);
            double dd = (da[0] * u3[0] + da[1] * u3[1] + da[2] * u3[2]) +
                        (a1[0] * dw[0] + a1[1] * dw[1] + a1[2] * dw[2]);
            if (kk < 0.5 || kk > 1.5) {
                double g = 2.0 * d * dd / (n2 * n2);
                for (int k = 0; k < 3; k++) {
                    if (kk < 0.5)
                        e[k] = (da[k] - dd * u3[k] - d * dw[k]) / n2 + (a1[k] - d * u3[k]) * g;
                    else
                        e[k] = (dw[k] - dd * a1[k] - d * da[k]) / n2 + (u3[k] - d * a1[k]) * g;
                }
            } else {
                double f[3], hh[3], dc[3];
                cross3(da, u3, f);
                cross3(a1, dw, hh);
                for (int k = 0; k < 3; k++) dc[k] = f[k] + hh[k];
                double dn = (c[0] * dc[0] + c[1] * dc[1] + c[2] * dc[2]) / nn;
                for (int k = 0; k < 3; k++) e[k] = s * (dc[k] / nn - c[k] * dn / n2);
            }
            mtv3(Adot, x, rr[0], rr[1], rr[2], p);
            mtv3(A, x, e[0], e[1], e[2], q);
            for (int k = 0; k < 3; k++) o[k] = p[k] + q[k];
        } else {
            mtv3(A, x, rr[0], rr[1], rr[2], o);
        }
        for (int k = 0; k < 3; k++) out[dest[3 * i + k]] = sign * (fl[2] * o[k]);
    }
}

void bg_program(int64_t n, const double *states, const double *rates, int rate,
                const int64_t *desc, int64_t ndesc, const int64_t *ints, const double *flts,
                double *out0, double *out1) {
    int64_t nb = n + 1;
    double A[nb * 9], r[nb * 3], w[nb * 3], v[nb * 3], Adot[nb * 9];
    for (int64_t k = 0; k < nb * 9; k++) A[k] = Adot[k] = 0.0;
    for (int64_t k = 0; k < nb * 3; k++) r[k] = w[k] = v[k] = 0.0;
    A[0] = A[4] = A[8] = 1.0;
    /* frames: the normalised quaternions' matrices, the centres */
    for (int64_t i = 0; i < n; i++) {
        const double *s = states + 7 * i;
        double qw = s[0], qx = s[1], qy = s[2], qz = s[3];
        double q = sqrt(qw * qw + qx * qx + qy * qy + qz * qz);
        double e[9];
        bg_quat_matrix_entries(qw / q, qx / q, qy / q, qz / q, e);
        for (int k = 0; k < 9; k++) A[(i + 1) * 9 + k] = e[k];
        for (int k = 0; k < 3; k++) r[(i + 1) * 3 + k] = s[4 + k];
    }
    if (rate) {                /* body rates, dr/dt and dA/dt = A omega~ */
        for (int64_t i = 0; i < n; i++) {
            const double *s = states + 7 * i, *d = rates + 7 * i;
            double om[3];
            bg_body_rate_entries(s[0], s[1], s[2], s[3], d[0], d[1], d[2], d[3], om);
            for (int k = 0; k < 3; k++) {
                w[(i + 1) * 3 + k] = om[k];
                v[(i + 1) * 3 + k] = d[4 + k];
            }
            const double *R = A + (i + 1) * 9;
            double *Ad = Adot + (i + 1) * 9;
            for (int m = 0; m < 3; m++) {
                Ad[m * 3 + 0] = R[m * 3 + 1] * om[2] - R[m * 3 + 2] * om[1];
                Ad[m * 3 + 1] = -R[m * 3 + 0] * om[2] + R[m * 3 + 2] * om[0];
                Ad[m * 3 + 2] = R[m * 3 + 0] * om[1] - R[m * 3 + 1] * om[0];
            }
        }
    }
    for (int64_t g = 0; g < ndesc; g++) {
        const int64_t *row = desc + D_COLUMNS * g;
        int64_t code = row[D_CODE], cnt = row[D_N], K = row[D_K];
        double *out = row[D_TARGET] == 0 ? out0 : out1;
        double sign = (double)row[D_SIGN];
        const int64_t *ia = ints + row[D_IA], *ib = ints + row[D_IB], *dest = ints + row[D_DEST];
        const double *f0 = flts + row[D_F0], *f1 = flts + row[D_F1], *f2 = flts + row[D_F2];
        switch (code) {
        case SANDWICH:
            sandwich(A, Adot, rate, cnt, ia, ib, f0, f1, ints + row[D_NROW],
                     ints + row[D_NCOL], ints + row[D_FORM], dest, sign, out);
            break;
        case POINT_GAP:
            point_gap(A, r, cnt, ia, ib, f0, f1, dest, sign, out);
            break;
        case REVOLUTE_GAP:
            revolute_gap(A, cnt, ia, ib, f0, f1, dest, sign, out);
            break;
        case SLIDE_GAP:
            slide_gap(A, r, cnt, ia, ib, K, f0, f1, f2, dest, sign, out);
            break;
        case ORIENTATION_GAP:
            orientation_gap(A, cnt, ia, ib, f0, dest, sign, out);
            break;
        case PRISMATIC_ROTATION:
            prismatic_rotation(A, r, w, v, rate, cnt, ia, ib, K, f0, f1, f2, dest, sign, out);
            break;
        case AXES_CROSS:
            axes_cross(A, Adot, rate, cnt, ia, ib, f0, f1, f2, dest, sign, out);
            break;
        case AXES_DOT:
            axes_dot(A, cnt, ia, ib, f0, f1, f2, dest, sign, out);
            break;
        case AXES_COMBINATION:
            axes_combination(A, Adot, rate, cnt, ia, ib, f0, f1, f2, dest, sign, out);
            break;
        case SCREW_GAP:
            screw_gap(A, r, cnt, ia, ib, f0, dest, sign, out);
            break;
        case GAP_ROW:
            gap_row(A, r, w, v, rate, cnt, ia, ib, f0, f1, f2, dest, sign, out);
            break;
        case GAP_LENGTH:
            gap_length(A, r, cnt, ia, ib, f0, f1, f2, dest, sign, out);
            break;
        default:
            gimbal_rate(A, Adot, rate, cnt, ia, ib, f0, f1, f2, dest, sign, out);
        }
    }
}
