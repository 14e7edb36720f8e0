/* The fused engine: dX/dt of a mechanism as bondgraph/_rk_kernels.py fused_rhs computes
   it, in C: the element library's program (the moduli and Phi, then the moduli's
   rates), the velocity stage (_sparse_kernels._first), the kinematic rates, the
   acceleration stage (_second) and the work powers, on the packed arrays of the export
   (bg_fused.h). The kernels are those of bondgraph/_sparse_kernels.py (_stage, _first,
   _second) and bondgraph/_lu_kernels.py (_factor_into, _solve_kernel), in the same
   order of operations.

   Where the kept system's fixed pivot order fails its checks at a state (Python then
   takes another order or SuperLU's), the kept system is factored densely with partial
   pivoting instead: the same system, the same solution to rounding. A system that is
   singular there (a singular configuration) stops the evaluation with a message. */
#include <math.h>
#include <string.h>

#include "bg_fused.h"
#include "bg_linalg.h"

/* the parts of I_all / F_all (bondgraph/_sparse_kernels.py) */
enum { I_P, I_POFF, I_FOFF, I_INTS1, I_IOFF1, I_FOFF1, I_Q, I_QOFF, I_INTS2, I_IOFF2,
       I_FOFF2, I_SIZES, I_INTS3, I_IOFF3, I_FOFF3 };
enum { F_P, F_FLTS1, F_FLTS2, F_SCAL, F_FLTS3 };

#define IPART(k) (BGF_I_ALL + BGF_IO[k])
#define FPART(k) (BGF_F_ALL + BGF_FO[k])

typedef struct {
    int dense;                          /* the kept system's factors: 0 fixed order */
    double *Lx, *Vx, *d;                /* (fixed order, in work) */
    double *B;                          /* (dense: the LU of B) */
    int *piv;
} kept_lu;

typedef struct {
    double *src, *ext, *work, *w1, *y1, *w, *y, *acc, *b, *bE, *g, *rhs, *yK, *ce, *he;
    double *extra, *accu, *states, *srates, *moduli, *phi_p, *phi, *rates, *kin, *q, *om,
        *qr, *U1, *dU1, *z;
    kept_lu lu;
    int64_t n_imp, nk, li, ui, nK, nmax, nEmax;
} fused_ws;

/* -- one stage (_sparse_kernels._stage) ---------------------------------------------- */
/* w (every wanted bond variable), y (the system's solution); 0, or 1 when not finite */
static int stage(fused_ws *s, const double *sources, const double *known,
                 const double *extra, int64_t e0, const int64_t *ints, const int64_t *ioff,
                 const double *flts, const int64_t *foff, int64_t n, int64_t n_E,
                 int64_t n_K, double *w, double *y) {
    const int64_t *krows = ints + ioff[0], *kidx = ints + ioff[1], *ksrc = ints + ioff[2];
    const int64_t *rE = ints + ioff[3], *rK = ints + ioff[4], *cE = ints + ioff[5],
                  *cK = ints + ioff[6];
    const int64_t *C_row = ints + ioff[7], *C_col = ints + ioff[8];
    const int64_t *G_row = ints + ioff[9], *G_col = ints + ioff[10], *G_src = ints + ioff[11];
    const int64_t *H_row = ints + ioff[12], *H_col = ints + ioff[13], *H_src = ints + ioff[14];
    const int64_t *wsrc = ints + ioff[15], *brows = ints + ioff[16], *ebk = ints + ioff[17],
                  *ek = ints + ioff[18];
    int64_t nk_t = ioff[1] - ioff[0], nC = ioff[8] - ioff[7], nG = ioff[10] - ioff[9];
    int64_t nH = ioff[13] - ioff[12], nw = ioff[16] - ioff[15], nb = ioff[17] - ioff[16];
    int64_t nebk = ioff[18] - ioff[17], nek = ioff[19] - ioff[18];
    const double *kcoef = flts + foff[0], *C_val = flts + foff[1], *G_coef = flts + foff[2],
                 *H_coef = flts + foff[3];
    double *acc = s->acc, *b = s->b, *bE = s->bE, *yK = s->yK, *ce = s->ce, *he = s->he;
    (void)n;
    for (int64_t i = 0; i < nb; i++) acc[brows[i]] = 0.0;
    for (int64_t t = 0; t < nk_t; t++) acc[krows[t]] += kcoef[t] * sources[ksrc[t]] * known[kidx[t]];
    for (int64_t i = 0; i < nb; i++) {
        int64_t r = brows[i];
        b[r] = -acc[r] + (r >= e0 ? extra[r - e0] : 0.0);
    }
    for (int64_t i = 0; i < nebk; i++) bE[ebk[i]] = b[rE[ebk[i]]];
    int finite = 1;
    if (n_K) {
        double *g = s->g, *rhs = s->rhs;
        for (int64_t i = 0; i < n_K; i++) g[i] = 0.0;
        for (int64_t t = 0; t < nG; t++) g[G_row[t]] += G_coef[t] * sources[G_src[t]] * bE[G_col[t]];
        for (int64_t i = 0; i < n_K; i++) rhs[i] = b[rK[i]] - g[i];
        /* _solve_kernel: A y = b with P_r A P_c = L (I + V) D */
        const int64_t *prow = BGF_S_INTS + BGF_S_OFF[0], *gather = BGF_S_INTS + BGF_S_OFF[1];
        double *z = s->z;
        for (int64_t i = 0; i < n_K; i++) z[prow[i]] = rhs[i];
        if (!s->lu.dense) {
            const int64_t *Li = BGF_S_INTS + BGF_S_OFF[2], *Lj = BGF_S_INTS + BGF_S_OFF[3];
            const int64_t *Ui = BGF_S_INTS + BGF_S_OFF[4], *Uj = BGF_S_INTS + BGF_S_OFF[5];
            int64_t nL = BGF_S_OFF[3] - BGF_S_OFF[2], nU = BGF_S_OFF[5] - BGF_S_OFF[4];
            const double *Lx = s->lu.Lx, *Vx = s->lu.Vx;
            for (int64_t q = 0; q < nL; q++) z[Li[q]] -= Lx[q] * z[Lj[q]];
            for (int64_t p = nU - 1; p >= 0; p--) z[Ui[p]] -= Vx[p] * z[Uj[p]];
            int64_t ng = BGF_S_OFF[2] - BGF_S_OFF[1];
            for (int64_t c = 0; c < ng; c++) {
                int64_t k = gather[c];
                double v = z[k] / s->lu.d[k];
                yK[c] = v;
                if (!isfinite(v)) finite = 0;
            }
        } else {
            bg_lu_solve(s->lu.B, (int)n_K, s->lu.piv, z, 1);
            int64_t ng = BGF_S_OFF[2] - BGF_S_OFF[1];
            for (int64_t c = 0; c < ng; c++) {
                double v = z[gather[c]];
                yK[c] = v;
                if (!isfinite(v)) finite = 0;
            }
        }
        for (int64_t i = 0; i < n_K; i++) y[cK[i]] = yK[i];
    }
    for (int64_t i = 0; i < nek; i++) {
        ce[ek[i]] = 0.0;
        he[ek[i]] = 0.0;
    }
    for (int64_t t = 0; t < nC; t++) ce[C_row[t]] += C_val[t] * bE[C_col[t]];
    for (int64_t t = 0; t < nH; t++) he[H_row[t]] += H_coef[t] * sources[H_src[t]] * yK[H_col[t]];
    for (int64_t i = 0; i < nek; i++) {
        int64_t k = ek[i];
        double v = ce[k] - he[k];
        y[cE[k]] = v;
        if (!isfinite(v)) finite = 0;
    }
    (void)n_E;
    for (int64_t j = 0; j < nw; j++) {
        int64_t q = wsrc[j];
        w[j] = q >= 0 ? y[q] : known[-1 - q];
    }
    return !finite;
}

/* -- the kept system's factors (_lu_kernels._factor_into; dense where that fails) ---- */
static int factor(bg_inst *m, fused_ws *s, const double *ext) {
    const int64_t *S = BGF_S_INTS, *O = BGF_S_OFF;
    const int64_t *tp = S + O[6], *t_row = S + O[7], *t_src = S + O[8], *Lp = S + O[9],
                  *Li = S + O[2], *Up = S + O[10], *Ui = S + O[4];
    const double *scal = FPART(F_SCAL);
    double tau = scal[0], ratio = scal[1];
    int64_t n = O[7] - O[6] - 1;
    double *x = s->z, *Lx = s->lu.Lx, *Vx = s->lu.Vx, *d = s->lu.d;
    double dmax = 0.0, dmin = INFINITY;
    int ok = 1;
    for (int64_t i = 0; i < n; i++) x[i] = 0.0;
    for (int64_t j = 0; j < n && ok; j++) {
        for (int64_t t = tp[j]; t < tp[j + 1]; t++) x[t_row[t]] += BGF_T_COEF[t] * ext[t_src[t]];
        double total = 0.0;
        for (int64_t p = Up[j]; p < Up[j + 1]; p++) {
            int64_t k = Ui[p];
            double ukj = x[k];
            x[k] = 0.0;
            Vx[p] = ukj;
            total += fabs(ukj);
            for (int64_t q = Lp[k]; q < Lp[k + 1]; q++) x[Li[q]] -= Lx[q] * ukj;
        }
        double piv = x[j];
        x[j] = 0.0;
        double a = fabs(piv), cmax = a;
        for (int64_t q = Lp[j]; q < Lp[j + 1]; q++) {
            double v = fabs(x[Li[q]]);
            total += v;
            if (v > cmax) cmax = v;
        }
        total += a;
        if (!(isfinite(total) && a > 0.0 && a >= tau * cmax)) { ok = 0; break; }
        double inv = 1.0 / piv;
        for (int64_t q = Lp[j]; q < Lp[j + 1]; q++) {
            int64_t i = Li[q];
            Lx[q] = x[i] * inv;
            x[i] = 0.0;
        }
        for (int64_t p = Up[j]; p < Up[j + 1]; p++) Vx[p] *= inv;
        d[j] = piv;
        if (a > dmax) dmax = a;
        if (a < dmin) dmin = a;
    }
    if (ok && !(dmin <= ratio * dmax)) {
        s->lu.dense = 0;
        return 0;
    }
    /* the dense factors of the same B */
    double *B = s->lu.B;
    memset(B, 0, sizeof(double) * (size_t)(n * n));
    for (int64_t j = 0; j < n; j++)
        for (int64_t t = tp[j]; t < tp[j + 1]; t++)
            B[t_row[t] * n + j] += BGF_T_COEF[t] * ext[t_src[t]];
    double lo = 0.0, hi = 0.0;
    if (bg_lu(B, (int)n, s->lu.piv, &lo, &hi) || lo <= ratio * hi)
        return bg_fail(m, "the mechanism's constraint system is singular here (a singular "
                          "configuration: two joint axes aligned, a loop that cannot "
                          "close, or a locked chain)");
    s->lu.dense = 1;
    return 0;
}

/* -- the velocity stage (_first) ----------------------------------------------------- */
static int first(bg_inst *m, fused_ws *s, const double *x, const double *moduli) {
    const int64_t *P_int = IPART(I_P), *P_off = IPART(I_POFF), *F_off = IPART(I_FOFF);
    const double *P_flt = FPART(F_P);
    const int64_t *sizes = IPART(I_SIZES);
    int64_t n_K = sizes[2];
    const int64_t *dd = P_int + P_off[0], *dt = P_int + P_off[1], *e_idx = P_int + P_off[2];
    const int64_t *F_ptr = P_int + P_off[3], *F_ind = P_int + P_off[4];
    const int64_t *pa = P_int + P_off[5], *pb = P_int + P_off[6], *sc = P_int + P_off[7];
    int64_t ndd = P_off[1] - P_off[0], ne = P_off[3] - P_off[2], npair = P_off[6] - P_off[5];
    int64_t off_RE = sc[0], Z0 = sc[1], nZ = sc[2], U0 = sc[3], nU = sc[4];
    const double *e_sign = P_flt + F_off[0], *F_dat = P_flt + F_off[1];
    double *known = s->work, *src = s->src;
    for (int64_t k = 0; k < ndd; k++) {
        double v = -moduli[k];
        if (!isfinite(v))       /* (a gimbal in lock: its kernels write NaN) */
            return bg_fail(m, "%s: its modulus is not finite here",
                           BGF_MOD_NAME[BGF_MOD_OWNER[k]]);
        src[dd[k]] = v;
        src[dt[k]] = v;
    }
    for (int64_t k = 0; k < ne; k++) {
        double v = e_sign[k] * x[e_idx[k]];
        if (!isfinite(v)) return bg_fail(m, "a body's angular momentum is not finite");
        src[off_RE + k] = v;
    }
    for (int64_t i = 0; i < s->nk; i++) known[i] = 0.0;
    for (int64_t i = 0; i < nZ; i++) {
        double v = 0.0;
        for (int64_t p = F_ptr[i]; p < F_ptr[i + 1]; p++) v += F_dat[p] * x[F_ind[p]];
        if (!isfinite(v)) return bg_fail(m, "a co-energy (velocity) is not finite");
        known[Z0 + i] = v;
    }
    for (int64_t i = 0; i < nU; i++) {
        if (!isfinite(s->U1[i])) return bg_fail(m, "a source's value is not finite");
        known[U0 + i] = s->U1[i];
    }
    if (n_K) {
        const double *ext = src;
        if (npair) {
            memcpy(s->ext, src, sizeof(double) * (size_t)BGF_NSRC);
            for (int64_t p = 0; p < npair; p++) s->ext[BGF_NSRC + p] = src[pa[p]] * src[pb[p]];
            ext = s->ext;
        }
        if (factor(m, s, ext)) return 1;
    }
    int64_t n1 = sizes[3], n_E1 = sizes[4], n_K1 = sizes[5];
    if (stage(s, src, known, NULL, n1, IPART(I_INTS1), IPART(I_IOFF1), FPART(F_FLTS1),
              IPART(I_FOFF1), n1, n_E1, n_K1, s->w1, s->y1))
        return bg_fail(m, "the velocity stage's bond variables are not finite");
    return 0;
}

/* -- the acceleration stage (_second) ------------------------------------------------ */
static int second(bg_inst *m, fused_ws *s, const double *rates, const double *phi, int full,
                  double *w, double *y) {
    const int64_t *Q_int = IPART(I_Q), *Q_off = IPART(I_QOFF), *sizes = IPART(I_SIZES);
    int64_t n = sizes[0], n_E = sizes[1], n_K = sizes[2];
    const int64_t *rows = Q_int + Q_off[0], *mods = Q_int + Q_off[1], *wdyn = Q_int + Q_off[2];
    const int64_t *wC = Q_int + Q_off[3], *sc = Q_int + Q_off[4];
    int64_t nrows = Q_off[1] - Q_off[0], nwC = Q_off[4] - Q_off[3];
    int64_t z0 = sc[0], n_u = sc[1], dU0 = sc[2], nU = sc[3], rate_terms = sc[4];
    double *known = s->work, *extra = s->extra, *w1 = s->w1;
    for (int64_t i = 0; i < n - z0; i++) extra[i] = 0.0;
    if (rate_terms) {
        double *acc = s->accu;
        for (int64_t i = 0; i < n_u; i++) acc[i] = 0.0;
        for (int64_t t = 0; t < nrows; t++) acc[rows[t]] += (-rates[mods[t]]) * w1[wdyn[t]];
        for (int64_t i = 0; i < n_u; i++) extra[i] = 0.0 - acc[i];
    }
    for (int64_t i = 0; i < nU; i++) {
        double v = s->dU1[i];
        known[dU0 + i] = isfinite(v) ? v : 0.0;
    }
    if (BGF_DIMS[5]) {
        double a2 = BGF_AB[0], b2 = BGF_AB[1];
        for (int64_t i = 0; i < nwC; i++) {
            double p = phi[i], pz = isnan(p) ? 0.0 : p;
            extra[n_u + i] = extra[n_u + i] - (a2 * w1[wC[i]] + b2 * pz);
        }
    }
    for (int64_t i = 0; i < n - z0; i++)
        if (!isfinite(extra[i]))
            return bg_fail(m, "the constraint equations' right-hand side is not finite");
    int bad = full ? stage(s, s->src, known, extra, z0, IPART(I_INTS2), IPART(I_IOFF2),
                           FPART(F_FLTS2), IPART(I_FOFF2), n, n_E, n_K, w, y)
                   : stage(s, s->src, known, extra, z0, IPART(I_INTS3), IPART(I_IOFF3),
                           FPART(F_FLTS3), IPART(I_FOFF3), n, n_E, n_K, w, y);
    if (bad) return bg_fail(m, "the acceleration stage's solution is not finite");
    return 0;
}

/* -- the right-hand side (fused_rhs) ------------------------------------------------- */
static int evaluate(bg_inst *m, double t, const double *x, int full, double *xdot,
                    double *wall, double *U2) {
    fused_ws *s = (fused_ws *)m->engine;
    int64_t n_b = BGF_DIMS[0], n_mod = BGF_DIMS[1], n_phi = BGF_DIMS[2], n_u2 = BGF_DIMS[3];
    int64_t rate_terms = BGF_DIMS[4], n_kin = BGF_DIMS[6];
    for (int i = 0; i < BG_NX; i++)
        if (!isfinite(x[i])) return bg_fail(m, "state %s is not finite", BG_X_NAME[i]);
    if (!isfinite(t)) return bg_fail(m, "the time is not finite");
    if (bg_sources(m, t, m->p, m->u, s->U1, s->dU1)) return 1;
    for (int64_t i = 0; i < n_b; i++)
        for (int k = 0; k < 7; k++) s->states[i * 7 + k] = x[BGF_XI[7 * i + k]];
    bg_program(n_b, s->states, s->states, 0, BGF_V_DESC, BGF_V_NDESC, BGF_V_INTS, BGF_V_FLTS,
               s->moduli, s->phi_p);
    for (int64_t i = 0; i < n_u2; i++) s->phi[i] = NAN;
    for (int64_t i = 0; i < n_phi; i++) s->phi[BGF_DEST_P[i]] = s->phi_p[i];
    for (int64_t k = 0; k < BGF_NPHIA; k++) {
        double v = 0.0;
        for (int64_t j = 0; j < BGF_PHIA_M; j++)
            v += BGF_PHIA_COEF[k * BGF_PHIA_M + j] * x[BGF_PHIA_IDX[k * BGF_PHIA_M + j]];
        s->phi[BGF_PHIA_DEST[k]] = v + BGF_PHIA_CONST[k];
    }
    if (first(m, s, x, s->moduli)) return 1;
    /* the kinematic rates: copies of flows, then the rate kernel */
    for (int64_t i = 0; i < BGF_NCOPY; i++) s->kin[BGF_COPY_DST[i]] = s->w1[BGF_W1_KIN[BGF_COPY_SRC[i]]];
    if (BGF_NQ) {
        for (int64_t i = 0; i < BGF_NQ; i++) {
            for (int64_t k = 0; k < BGF_QD; k++) s->q[i * BGF_QD + k] = x[BGF_Q_STATE[i * BGF_QD + k]];
            for (int64_t k = 0; k < BGF_QK; k++)
                s->om[i * BGF_QK + k] = s->w1[BGF_W1_KIN[BGF_Q_FLOW[i * BGF_QK + k]]];
        }
        bg_kin_rate(BGF_NQ, BGF_QD, BGF_QK, s->q, s->om, s->qr);
        for (int64_t i = 0; i < BGF_NQ; i++)
            for (int64_t k = 0; k < BGF_QD; k++) s->kin[BGF_Q_DST[i * BGF_QD + k]] = s->qr[i * BGF_QD + k];
    }
    if (rate_terms) {
        for (int64_t i = 0; i < n_b; i++)
            for (int k = 0; k < 7; k++) s->srates[i * 7 + k] = s->kin[BGF_RI[7 * i + k]];
        bg_program(n_b, s->states, s->srates, 1, BGF_R_DESC, BGF_R_NDESC, BGF_R_INTS,
                   BGF_R_FLTS, s->rates, NULL);
    }
    (void)n_mod;
    if (second(m, s, s->rates, s->phi, full, s->w, s->y)) return 1;
    if (full) {
        memcpy(wall, s->w, sizeof(double) * (size_t)BG_NW);
        for (int64_t i = 0; i < n_u2; i++) U2[i] = s->y[BGF_C2 + i];
        return 0;
    }
    int64_t nX = BGF_NW2X;
    for (int64_t i = 0; i < nX; i++) xdot[i] = s->w[BGF_W2_X[i]];
    for (int64_t i = 0; i < n_kin; i++) xdot[nX + i] = s->kin[i];
    for (int64_t p = 0; p < BGF_NWORK; p++) {
        double v = 0.0;
        for (int64_t j = BGF_WORK_OFF[p]; j < BGF_WORK_OFF[p + 1]; j++)
            v += s->w[BGF_WORK_E[j]] * s->w[BGF_WORK_F[j]];
        xdot[nX + n_kin + p] = v;
    }
    for (int i = 0; i < BG_NX; i++)
        if (!isfinite(xdot[i])) return bg_fail(m, "der(%s) is not finite", BG_X_NAME[i]);
    return 0;
}

int bg_engine_derivatives(bg_inst *m, double t, const double *x, double *xdot) {
    return evaluate(m, t, x, 0, xdot, NULL, NULL);
}

int bg_engine_full(bg_inst *m, double t, const double *x, double *w, double *U2) {
    return evaluate(m, t, x, 1, NULL, w, U2);
}

/* -- the workspace ----------------------------------------------------------------- */
static double *vec(bg_inst *m, int64_t n, int *bad) {
    double *p = (double *)bg_alloc(m, (size_t)(n > 0 ? n : 1), sizeof(double));
    if (!p) *bad = 1;
    return p;
}

int bg_engine_new(bg_inst *m) {
    fused_ws *s = (fused_ws *)bg_alloc(m, 1, sizeof(fused_ws));
    if (!s) return 1;
    memset(s, 0, sizeof *s);
    m->engine = s;
    int bad = 0;
    const int64_t *sizes = IPART(I_SIZES), *P_int = IPART(I_P), *P_off = IPART(I_POFF);
    const int64_t *Q_int = IPART(I_Q), *Q_off = IPART(I_QOFF);
    int64_t n_imp = P_int[P_off[7] + 5], npair = P_off[6] - P_off[5];
    s->n_imp = n_imp;
    s->nk = 2 * n_imp;
    s->li = BGF_S_OFF[3] - BGF_S_OFF[2];
    s->ui = BGF_S_OFF[5] - BGF_S_OFF[4];
    s->nK = sizes[2];
    s->nmax = sizes[0] > sizes[3] ? sizes[0] : sizes[3];
    s->nEmax = sizes[1] > sizes[4] ? sizes[1] : sizes[4];
    int64_t nw = 0, iw[3] = {I_IOFF1, I_IOFF2, I_IOFF3};
    for (int k = 0; k < 3; k++) {
        int64_t sz = IPART(iw[k])[16] - IPART(iw[k])[15];
        if (sz > nw) nw = sz;
    }
    int64_t z0 = Q_int[Q_off[4]], n_u = Q_int[Q_off[4] + 1];
    s->src = vec(m, BGF_NSRC, &bad);
    if (s->src) memcpy(s->src, BGF_SRC, sizeof(double) * (size_t)BGF_NSRC);
    s->ext = vec(m, BGF_NSRC + npair, &bad);
    s->work = vec(m, s->nk + s->li + s->ui + s->nK, &bad);
    s->lu.Lx = s->work + s->nk;
    s->lu.Vx = s->lu.Lx + s->li;
    s->lu.d = s->lu.Vx + s->ui;
    s->lu.B = vec(m, s->nK * s->nK, &bad);
    s->lu.piv = (int *)bg_alloc(m, (size_t)(s->nK > 0 ? s->nK : 1), sizeof(int));
    if (!s->lu.piv) bad = 1;
    s->w1 = vec(m, nw, &bad);
    s->w = vec(m, nw, &bad);
    s->y1 = vec(m, s->nmax, &bad);
    s->y = vec(m, s->nmax, &bad);
    s->acc = vec(m, s->nmax, &bad);
    s->b = vec(m, s->nmax, &bad);
    s->bE = vec(m, s->nEmax, &bad);
    s->ce = vec(m, s->nEmax, &bad);
    s->he = vec(m, s->nEmax, &bad);
    s->g = vec(m, s->nK, &bad);
    s->rhs = vec(m, s->nK, &bad);
    s->yK = vec(m, s->nK, &bad);
    s->z = vec(m, s->nK, &bad);
    s->extra = vec(m, sizes[0] - z0, &bad);
    s->accu = vec(m, n_u, &bad);
    s->states = vec(m, 7 * BGF_DIMS[0], &bad);
    s->srates = vec(m, 7 * BGF_DIMS[0], &bad);
    s->moduli = vec(m, BGF_DIMS[1], &bad);
    s->rates = vec(m, BGF_DIMS[1], &bad);
    s->phi_p = vec(m, BGF_DIMS[2], &bad);
    s->phi = vec(m, BGF_DIMS[3], &bad);
    s->kin = vec(m, BGF_DIMS[6], &bad);
    s->q = vec(m, BGF_NQ * BGF_QD, &bad);
    s->om = vec(m, BGF_NQ * BGF_QK, &bad);
    s->qr = vec(m, BGF_NQ * BGF_QD, &bad);
    s->U1 = vec(m, 1 + P_int[P_off[7] + 4], &bad);
    s->dU1 = vec(m, 1 + P_int[P_off[7] + 4], &bad);
    return bad;
}

void bg_engine_free(bg_inst *m) {
    fused_ws *s = (fused_ws *)m->engine;
    if (!s) return;
    double *all[] = {s->src, s->ext, s->work, s->lu.B, s->w1, s->w, s->y1, s->y, s->acc,
                     s->b, s->bE, s->ce, s->he, s->g, s->rhs, s->yK, s->z, s->extra,
                     s->accu, s->states, s->srates, s->moduli, s->rates, s->phi_p, s->phi,
                     s->kin, s->q, s->om, s->qr, s->U1, s->dU1};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) bg_free(m, all[i]);
    bg_free(m, s->lu.piv);
    bg_free(m, s);
    m->engine = NULL;
}

void bg_engine_reset(bg_inst *m) {
    (void)m;            /* (the parameters it takes, the sources', are read per evaluation) */
}
