/* The dense engine: StateSpaceModel.evaluate and _reduced of bondgraph/reduction.py in
   C, for a plain bond graph (any size the dense reduction serves: tens of bonds).

   Per evaluation: the junction structure's full map W (A_u w_u = -A_i v, solved by LU
   with partial pivoting; kept while the moduli do not depend on the state and the
   parameters do not change), the fields (Z, F, R, R_E, U_1), the eliminations of D and
   E (G, A1..A5, B1..B4 with the corrections of method.md (a)), U_2 by Eq. (14) or
   (15), dX/dt, and every bond variable w = W v. Nonlinear resistors: Newton's method
   on their inputs, each pass the linear reduction with the laws' tangents and offsets,
   started from the last solution, with reduction.py's stopping rule. */
#include <math.h>
#include <string.h>

#include "bg_dense.h"
#include "bg_linalg.h"

#define NEWTON_RTOL 1e-12
#define NEWTON_MAX_ITERATIONS 100
#define MAXBUF 96

enum { GX, GL, GE, GC };                  /* received groups */
enum { IZ, IL, IU1, IU2, IE };            /* imposed groups */

typedef struct {
    int nbuf;
    void *buf[MAXBUF];
    int w_ready, r_ready;                 /* W (constant moduli), R (parameters) */
    int have_start;
    int nx, nz, nl, ne, nu1, nu2, nu1a;
    double *data, *Au, *Ai, *W, *mod, *modr, *dA, *M;
    int *piv;
    double *J[4][5];                      /* J blocks: received group x imposed group */
    double *K[4];                         /* [J_YU1 | J_YL]: the known columns of row Y */
    double *Z, *F, *R, *Rk, *o, *RE, *U1, *dU1, *U1a, *d, *start, *law, *jac;
    double *G, *MG, *RG, *ELRG, *A1, *A2, *A4, *A5, *LERA1, *B1, *B3, *B4, *RA1, *tmpL;
    double *TZ[2], *TU[2], *TU2[2], *YLR, *YERA1;    /* reduce() of X and of C */
    double *kin, *dJCZ, *dJCU1, *JCF, *H4, *rhs, *Din, *Ein, *v, *w, *U2, *vec, *wrk;
    int *piv2;
} dense_ws;

static double *take(bg_inst *m, dense_ws *s, int n) {
    if (s->nbuf >= MAXBUF) return NULL;
    double *p = (double *)bg_alloc(m, (size_t)(n > 0 ? n : 1), sizeof(double));
    s->buf[s->nbuf++] = p;
    return p;
}

int bg_engine_new(bg_inst *m) {
    dense_ws *s = (dense_ws *)bg_alloc(m, 1, sizeof(dense_ws));
    if (!s) return 1;
    memset(s, 0, sizeof *s);
    m->engine = s;
    int rows[4], cols[5];
    for (int g = 0; g < 4; g++) rows[g] = BGD_REC_OFF[g + 1] - BGD_REC_OFF[g];
    for (int g = 0; g < 5; g++) cols[g] = BGD_IMP_OFF[g + 1] - BGD_IMP_OFF[g];
    int nz = s->nz = BGD_NZ, nl = s->nl = BGD_NL, ne = s->ne = BGD_NE;
    int nu1 = s->nu1 = BGD_NU1, n2 = s->nu2 = BGD_NU2, nx = s->nx = rows[GX];
    int na = s->nu1a = nu1 + nl, neq = BGD_NEQ, ni = BGD_NIMP, nv = BGD_NVAR;
    int big = nz > na ? nz : na;
    if (n2 > big) big = n2;
    if (nl > big) big = nl;
    if (ne > big) big = ne;
    s->data = take(m, s, BGD_NNZ);
    s->Au = take(m, s, neq * neq);
    s->Ai = take(m, s, neq * ni);
    s->W = take(m, s, nv * ni);
    s->mod = take(m, s, BGD_NMODV);
    s->modr = take(m, s, BGD_NMODV);
    s->dA = take(m, s, BGD_NNZ);
    s->M = take(m, s, neq * ni);
    s->piv = (int *)bg_alloc(m, (size_t)(neq > 0 ? neq : 1), sizeof(int));
    s->piv2 = (int *)bg_alloc(m, (size_t)(big > 0 ? big : 1), sizeof(int));
    for (int y = 0; y < 4; y++) {
        for (int g = 0; g < 5; g++) s->J[y][g] = take(m, s, rows[y] * cols[g]);
        s->K[y] = take(m, s, rows[y] * na);
    }
    s->Z = take(m, s, nz);
    s->F = take(m, s, nz * nz);
    s->R = take(m, s, nl * nl);
    s->Rk = take(m, s, nl * nl);
    s->o = take(m, s, nl);
    s->RE = take(m, s, ne * ne);
    s->U1 = take(m, s, nu1);
    s->dU1 = take(m, s, nu1);
    s->U1a = take(m, s, na);
    s->d = take(m, s, nl);
    s->start = take(m, s, nl);
    s->law = take(m, s, 9);
    s->jac = take(m, s, 81);
    s->G = take(m, s, nl * nl);
    s->MG = take(m, s, big * big);
    s->RG = take(m, s, nl * nl);
    s->ELRG = take(m, s, ne * nl);
    s->A1 = take(m, s, ne * ne);
    s->A2 = take(m, s, ne * nz);
    s->A4 = take(m, s, ne * na);
    s->A5 = take(m, s, ne * n2);
    s->LERA1 = take(m, s, nl * ne);
    s->B1 = take(m, s, nl * nz);
    s->B3 = take(m, s, nl * na);
    s->B4 = take(m, s, nl * n2);
    s->RA1 = take(m, s, ne * ne);
    s->tmpL = take(m, s, nl * big);
    for (int k = 0; k < 2; k++) {
        int ny = k ? n2 : nx;
        s->TZ[k] = take(m, s, ny * nz);
        s->TU[k] = take(m, s, ny * na);
        s->TU2[k] = take(m, s, ny * n2);
    }
    int ny = nx > n2 ? nx : n2;
    s->YLR = take(m, s, ny * nl);
    s->YERA1 = take(m, s, ny * ne);
    s->kin = take(m, s, BGD_NKIN);
    s->dJCZ = take(m, s, n2 * nz);
    s->dJCU1 = take(m, s, n2 * nu1);
    s->JCF = take(m, s, n2 * nz);
    s->H4 = take(m, s, n2 * n2);
    s->rhs = take(m, s, n2);
    s->Din = take(m, s, nl);
    s->Ein = take(m, s, ne);
    s->v = take(m, s, ni);
    s->w = take(m, s, nv);
    s->U2 = take(m, s, n2);
    s->vec = take(m, s, big);
    s->wrk = take(m, s, big);
    for (int i = 0; i < s->nbuf; i++)
        if (!s->buf[i]) return 1;
    return !s->piv || !s->piv2 || s->nbuf >= MAXBUF;
}

void bg_engine_free(bg_inst *m) {
    dense_ws *s = (dense_ws *)m->engine;
    if (!s) return;
    for (int i = 0; i < s->nbuf; i++) bg_free(m, s->buf[i]);
    bg_free(m, s->piv);
    bg_free(m, s->piv2);
    bg_free(m, s);
    m->engine = NULL;
}

void bg_engine_reset(bg_inst *m) {
    dense_ws *s = (dense_ws *)m->engine;
    s->w_ready = s->r_ready = 0;
    s->have_start = 0;
}

/* -- the junction structure -------------------------------------------------------- */
static int junction(bg_inst *m, dense_ws *s, const double *x) {
    int neq = BGD_NEQ, ni = BGD_NIMP, nv = BGD_NVAR;
    if (BGD_NMODV && bgd_moduli(m, m->p, x, s->mod)) return 1;
    memcpy(s->data, BGD_BASE, sizeof(double) * BGD_NNZ);
    for (int k = 0; k < BGD_NMODB; k++) {
        int st = BGD_MOD_START[k], n2 = BGD_MOD_N2[k], n1 = BGD_MOD_N1[k];
        const double *mu = s->mod + BGD_MOD_OFF[k];
        for (int i = 0; i < n2; i++)
            for (int j = 0; j < n1; j++) {
                s->data[st + i * n1 + j] = -mu[i * n1 + j];
                s->data[st + n2 * n1 + j * n2 + i] = -mu[i * n1 + j];
            }
    }
    memset(s->Au, 0, sizeof(double) * neq * neq);
    memset(s->Ai, 0, sizeof(double) * neq * ni);
    for (int e = 0; e < BGD_NNZ; e++) {
        int r = BGD_ROW[e], c = BGD_COL[e];
        if (!isfinite(s->data[e]))
            return bg_fail(m, "a modulus of the junction structure is not finite");
        if (BGD_COL_U[c] >= 0) s->Au[r * neq + BGD_COL_U[c]] += s->data[e];
        else s->Ai[r * ni + BGD_COL_I[c]] += s->data[e];
    }
    memset(s->W, 0, sizeof(double) * nv * ni);
    for (int k = 0; k < ni; k++) s->W[BGD_IMP[k] * ni + k] = 1.0;
    if (neq) {
        if (bg_lu(s->Au, neq, s->piv, NULL, NULL))
            return bg_fail(m, "the junction structure cannot be solved for the received "
                              "variables (its matrix is singular or not finite): check the "
                              "moduli of its transformers and gyrators");
        memcpy(s->M, s->Ai, sizeof(double) * neq * ni);
        bg_lu_solve(s->Au, neq, s->piv, s->M, ni);
        for (int r = 0; r < neq; r++)
            for (int k = 0; k < ni; k++) s->W[BGD_UNK[r] * ni + k] = -s->M[r * ni + k];
    }
    /* the J blocks and the known columns [J_YU1 | J_YL] */
    for (int y = 0; y < 4; y++) {
        int r0 = BGD_REC_OFF[y], nr = BGD_REC_OFF[y + 1] - r0;
        for (int g = 0; g < 5; g++) {
            int c0 = BGD_IMP_OFF[g], nc = BGD_IMP_OFF[g + 1] - c0;
            for (int i = 0; i < nr; i++)
                for (int j = 0; j < nc; j++)
                    s->J[y][g][i * nc + j] = s->W[BGD_REC[r0 + i] * ni + c0 + j];
        }
        for (int i = 0; i < nr; i++) {
            for (int j = 0; j < s->nu1; j++)
                s->K[y][i * s->nu1a + j] = s->J[y][IU1][i * s->nu1 + j];
            for (int j = 0; j < s->nl; j++)
                s->K[y][i * s->nu1a + s->nu1 + j] = s->J[y][IL][i * s->nl + j];
        }
    }
    return 0;
}

/* (I - M)^-1 into out (n x n), M overwritten; 0 or 1 (singular) */
static int inverse_of_identity_minus(dense_ws *s, double *Mt, double *out, int n) {
    for (int i = 0; i < n * n; i++) Mt[i] = -Mt[i];
    for (int i = 0; i < n; i++) Mt[i * n + i] += 1.0;
    if (bg_lu(Mt, n, s->piv2, NULL, NULL)) return 1;
    memset(out, 0, sizeof(double) * n * n);
    for (int i = 0; i < n; i++) out[i * n + i] = 1.0;
    bg_lu_solve(Mt, n, s->piv2, out, n);
    for (int i = 0; i < n * n; i++)
        if (!isfinite(out[i])) return 1;
    return 0;
}

/* T_Z, T_U1a, T_U2 of received group Y (k = 0 for X, 1 for C) */
static void reduce(dense_ws *s, int Y, int k, const double *R) {
    int ny = BGD_REC_OFF[Y + 1] - BGD_REC_OFF[Y];
    int nz = s->nz, nl = s->nl, ne = s->ne, na = s->nu1a, n2 = s->nu2;
    bg_mm(s->YLR, s->J[Y][IL], R, ny, nl, nl, 0);
    bg_mm(s->YERA1, s->J[Y][IE], s->RA1, ny, ne, ne, 0);
    memcpy(s->TZ[k], s->J[Y][IZ], sizeof(double) * ny * nz);
    bg_mm(s->TZ[k], s->YLR, s->B1, ny, nl, nz, 1);
    bg_mm(s->TZ[k], s->YERA1, s->A2, ny, ne, nz, 1);
    memcpy(s->TU[k], s->K[Y], sizeof(double) * ny * na);
    bg_mm(s->TU[k], s->YLR, s->B3, ny, nl, na, 1);
    bg_mm(s->TU[k], s->YERA1, s->A4, ny, ne, na, 1);
    memcpy(s->TU2[k], s->J[Y][IU2], sizeof(double) * ny * n2);
    bg_mm(s->TU2[k], s->YLR, s->B4, ny, nl, n2, 1);
    bg_mm(s->TU2[k], s->YERA1, s->A5, ny, ne, n2, 1);
}

/* the bond variables w = W v for v = [Z; R Din + o; U1; U2; R_E Ein] */
static void bond_values(dense_ws *s, const double *R, const double *o, const double *U2) {
    int nz = s->nz, nl = s->nl, ne = s->ne, na = s->nu1a, n2 = s->nu2, ni = BGD_NIMP;
    bg_mv(s->Din, s->B1, s->Z, nl, nz, 0);
    bg_mv(s->Din, s->B3, s->U1a, nl, na, 1);
    bg_mv(s->Din, s->B4, U2, nl, n2, 1);
    if (ne) {
        bg_mv(s->vec, s->A2, s->Z, ne, nz, 0);
        bg_mv(s->vec, s->A4, s->U1a, ne, na, 1);
        bg_mv(s->vec, s->A5, U2, ne, n2, 1);
        bg_mv(s->Ein, s->A1, s->vec, ne, ne, 0);
    }
    double *v = s->v;
    memcpy(v + BGD_IMP_OFF[IZ], s->Z, sizeof(double) * nz);
    bg_mv(v + BGD_IMP_OFF[IL], R, s->Din, nl, nl, 0);
    for (int i = 0; i < nl; i++) v[BGD_IMP_OFF[IL] + i] += o[i];
    memcpy(v + BGD_IMP_OFF[IU1], s->U1, sizeof(double) * s->nu1);
    memcpy(v + BGD_IMP_OFF[IU2], U2, sizeof(double) * n2);
    bg_mv(v + BGD_IMP_OFF[IE], s->RE, s->Ein, ne, ne, 0);
    bg_mv(s->w, s->W, v, BGD_NVAR, ni, 0);
}

/* one pass of the reduction with the resistive field D_out = R D_in + o: dX/dt into
   xdot (when given), U_2, D_in and every bond variable; 0 or 1 */
static int reduced(bg_inst *m, dense_ws *s, const double *x, const double *R,
                   const double *o, double *xdot) {
    int nz = s->nz, nl = s->nl, ne = s->ne, na = s->nu1a, n2 = s->nu2, nx = s->nx;
    for (int i = 0; i < s->nu1; i++) s->U1a[i] = s->U1[i];
    for (int i = 0; i < nl; i++) s->U1a[s->nu1 + i] = o[i];
    /* G = (I - J_LL R)^-1 */
    if (nl) {
        bg_mm(s->MG, s->J[GL][IL], R, nl, nl, nl, 0);
        if (inverse_of_identity_minus(s, s->MG, s->G, nl))
            return bg_fail(m, "the algebraic loop through the resistive field (%s) cannot "
                              "be solved: I - J R is singular or not finite; check their "
                              "parameters", BGD_L_NAMES);
        bg_mm(s->RG, R, s->G, nl, nl, nl, 0);
    }
    bg_mm(s->ELRG, s->J[GE][IL], s->RG, ne, nl, nl, 0);
    /* A1 = [I - J_EE R_E - J_EL R G J_LE R_E]^-1 */
    if (ne) {
        bg_mm(s->tmpL, s->J[GL][IE], s->RE, nl, ne, ne, 0);          /* J_LE R_E */
        bg_mm(s->MG, s->J[GE][IE], s->RE, ne, ne, ne, 0);
        bg_mm(s->MG, s->ELRG, s->tmpL, ne, nl, ne, 1);
        if (inverse_of_identity_minus(s, s->MG, s->A1, ne))
            return bg_fail(m, "the algebraic loop through the EJS field (%s) cannot be "
                              "solved: I - J R is singular or not finite", BGD_E_NAMES);
    }
    memcpy(s->A2, s->J[GE][IZ], sizeof(double) * ne * nz);
    bg_mm(s->A2, s->ELRG, s->J[GL][IZ], ne, nl, nz, 1);
    memcpy(s->A4, s->K[GE], sizeof(double) * ne * na);
    bg_mm(s->A4, s->ELRG, s->K[GL], ne, nl, na, 1);
    memcpy(s->A5, s->J[GE][IU2], sizeof(double) * ne * n2);
    bg_mm(s->A5, s->ELRG, s->J[GL][IU2], ne, nl, n2, 1);
    /* LERA1 = J_LE R_E A1; B1, B3, B4 */
    bg_mm(s->MG, s->J[GL][IE], s->RE, nl, ne, ne, 0);
    bg_mm(s->LERA1, s->MG, s->A1, nl, ne, ne, 0);
    memcpy(s->tmpL, s->J[GL][IZ], sizeof(double) * nl * nz);
    bg_mm(s->tmpL, s->LERA1, s->A2, nl, ne, nz, 1);
    bg_mm(s->B1, s->G, s->tmpL, nl, nl, nz, 0);
    memcpy(s->tmpL, s->K[GL], sizeof(double) * nl * na);
    bg_mm(s->tmpL, s->LERA1, s->A4, nl, ne, na, 1);
    bg_mm(s->B3, s->G, s->tmpL, nl, nl, na, 0);
    memcpy(s->tmpL, s->J[GL][IU2], sizeof(double) * nl * n2);
    bg_mm(s->tmpL, s->LERA1, s->A5, nl, ne, n2, 1);
    bg_mm(s->B4, s->G, s->tmpL, nl, nl, n2, 0);
    bg_mm(s->RA1, s->RE, s->A1, ne, ne, ne, 0);
    reduce(s, GX, 0, R);
    double *U2 = s->U2;
    if (n2) {
        reduce(s, GC, 1, R);
        /* c0 = T_CZ Z + T_CU1 U1a */
        bg_mv(s->rhs, s->TZ[1], s->Z, n2, nz, 0);
        bg_mv(s->rhs, s->TU[1], s->U1a, n2, na, 1);
        if (BGD_BRANCH == 15) {
            double *c0 = s->wrk;
            memcpy(c0, s->rhs, sizeof(double) * n2);
            memset(s->dJCZ, 0, sizeof(double) * n2 * nz);
            memset(s->dJCU1, 0, sizeof(double) * n2 * s->nu1);
            if (BGD_MOD_DYNAMIC) {
                /* the kinematic flows with U_2 = 0, the moduli's rates, dJ_C/dt */
                memset(U2, 0, sizeof(double) * n2);
                bond_values(s, R, o, U2);
                for (int i = 0; i < BGD_NKIN; i++) s->kin[i] = s->w[BGD_KIN_ROW[i]];
                if (bgd_moduli_rates(m, m->p, x, s->kin, s->modr)) return 1;
                int neq = BGD_NEQ, ni = BGD_NIMP;
                memset(s->dA, 0, sizeof(double) * BGD_NNZ);
                for (int k = 0; k < BGD_NMODB; k++) {
                    int st = BGD_MOD_START[k], b2 = BGD_MOD_N2[k], b1 = BGD_MOD_N1[k];
                    const double *r = s->modr + BGD_MOD_OFF[k];
                    for (int i = 0; i < b2; i++)
                        for (int j = 0; j < b1; j++) {
                            s->dA[st + i * b1 + j] = -r[i * b1 + j];
                            s->dA[st + b2 * b1 + j * b2 + i] = -r[i * b1 + j];
                        }
                }
                /* M = dA_u W_u + dA_i; dW_u/dt = -A_u^-1 M */
                memset(s->M, 0, sizeof(double) * neq * ni);
                for (int e = 0; e < BGD_NNZ; e++) {
                    double a = s->dA[e];
                    if (a == 0.0) continue;
                    int r = BGD_ROW[e], c = BGD_COL[e];
                    if (BGD_COL_U[c] >= 0) {
                        for (int k = 0; k < ni; k++) s->M[r * ni + k] += a * s->W[c * ni + k];
                    } else {
                        s->M[r * ni + BGD_COL_I[c]] += a;
                    }
                }
                bg_lu_solve(s->Au, neq, s->piv, s->M, ni);
                for (int i = 0; i < n2; i++) {
                    int row = BGD_COL_U[BGD_REC[BGD_REC_OFF[GC] + i]];
                    for (int j = 0; j < nz; j++)
                        s->dJCZ[i * nz + j] = -s->M[row * ni + BGD_IMP_OFF[IZ] + j];
                    for (int j = 0; j < s->nu1; j++)
                        s->dJCU1[i * s->nu1 + j] = -s->M[row * ni + BGD_IMP_OFF[IU1] + j];
                }
            }
            /* H4 U2 = -(J_CZ F (T_Z Z + T_U1 U1a) + J_CU1 dU1 + dJ_CZ Z + dJ_CU1 U1
                         [+ 2 alpha c0 + beta^2 Phi]) */
            bg_mm(s->JCF, s->J[GC][IZ], s->F, n2, nz, nz, 0);
            bg_mm(s->H4, s->JCF, s->TU2[0], n2, nz, n2, 0);
            bg_mv(s->vec, s->TZ[0], s->Z, nx, nz, 0);
            bg_mv(s->vec, s->TU[0], s->U1a, nx, na, 1);
            bg_mv(s->rhs, s->JCF, s->vec, n2, nz, 0);
            bg_mv(s->rhs, s->J[GC][IU1], s->dU1, n2, s->nu1, 1);
            bg_mv(s->rhs, s->dJCZ, s->Z, n2, nz, 1);
            bg_mv(s->rhs, s->dJCU1, s->U1, n2, s->nu1, 1);
            if (BGD_STAB)               /* (Phi: none in C, 0 as Python's nan_to_num) */
                for (int i = 0; i < n2; i++) s->rhs[i] += BGD_ALPHA2 * c0[i];
        } else {
            memcpy(s->H4, s->TU2[1], sizeof(double) * n2 * n2);     /* T_LE */
        }
        for (int i = 0; i < n2; i++) U2[i] = -s->rhs[i];
        for (int i = 0; i < n2 * n2; i++)
            if (!isfinite(s->H4[i]))
                return bg_fail(m, "the constraint equations of Eq. (%d) are not finite "
                                  "for %s", BGD_BRANCH, BGD_U2_NAMES);
        if (bg_lu(s->H4, n2, s->piv2, NULL, NULL))
            return bg_fail(m, "the constraint matrix of Eq. (%d) is singular for %s",
                           BGD_BRANCH, BGD_U2_NAMES);
        bg_lu_solve(s->H4, n2, s->piv2, U2, 1);
    }
    if (xdot) {
        bg_mv(xdot, s->TZ[0], s->Z, nx, nz, 0);
        bg_mv(xdot, s->TU[0], s->U1a, nx, na, 1);
        bg_mv(xdot, s->TU2[0], U2, nx, n2, 1);
    }
    bond_values(s, R, o, U2);
    return 0;
}

/* the whole evaluation: w (s->w), U_2 (s->U2) and, when given, dX/dt */
static int evaluate(bg_inst *m, double t, const double *x, double *xdot) {
    dense_ws *s = (dense_ws *)m->engine;
    int nz = s->nz, nl = s->nl;
    for (int i = 0; i < BG_NX; i++)
        if (!isfinite(x[i])) return bg_fail(m, "state %s is not finite", BG_X_NAME[i]);
    if (BGD_MOD_DYNAMIC || !s->w_ready) {
        if (junction(m, s, x)) return 1;
        s->w_ready = 1;
    }
    if (!s->r_ready) {
        memset(s->R, 0, sizeof(double) * nl * nl);
        if (bgd_resistors(m, m->p, s->R)) return 1;
        s->r_ready = 1;
    }
    memset(s->F, 0, sizeof(double) * nz * nz);
    if (bgd_fields(m, m->p, x, s->Z, s->F)) return 1;
    memset(s->RE, 0, sizeof(double) * s->ne * s->ne);
    if (s->ne && bgd_euler(m, x, s->RE)) return 1;
    if (bg_sources(m, t, m->p, m->u, s->U1, s->dU1)) return 1;
    if (!BGD_NNL) {
        memset(s->o, 0, sizeof(double) * nl);
        if (reduced(m, s, x, s->R, s->o, xdot)) return 1;
    } else {
        /* Newton's method on the nonlinear resistors' inputs (reduction.py) */
        if (!s->have_start) {
            memset(s->o, 0, sizeof(double) * nl);
            if (reduced(m, s, x, s->R, s->o, NULL)) return 1;
            memcpy(s->d, s->Din, sizeof(double) * nl);
        } else {
            memcpy(s->d, s->start, sizeof(double) * nl);
        }
        double last = INFINITY, delta = 0.0;
        int done = 0;
        for (int it = 0; it < NEWTON_MAX_ITERATIONS && !done; it++) {
            memcpy(s->Rk, s->R, sizeof(double) * nl * nl);
            memset(s->o, 0, sizeof(double) * nl);
            for (int k = 0; k < BGD_NNL; k++) {
                int off = BGD_NL_OFF[k], dim = BGD_NL_DIM[k];
                if (bgd_rlaw(m, k, m->p, s->d + off, s->law, s->jac)) return 1;
                for (int i = 0; i < dim * dim; i++)      /* tangent_or_zero */
                    if (!isfinite(s->jac[i])) s->jac[i] = 0.0;
                for (int i = 0; i < dim; i++) {
                    double od = s->law[i];
                    for (int j = 0; j < dim; j++) {
                        s->Rk[(off + i) * nl + off + j] = s->jac[i * dim + j];
                        od -= s->jac[i * dim + j] * s->d[off + j];
                    }
                    s->o[off + i] = od;
                }
            }
            if (reduced(m, s, x, s->Rk, s->o, xdot)) return 1;
            double size = 0.0;
            delta = 0.0;
            for (int k = 0; k < BGD_NNL; k++)
                for (int i = BGD_NL_OFF[k]; i < BGD_NL_OFF[k] + BGD_NL_DIM[k]; i++) {
                    delta = fmax(delta, fabs(s->Din[i] - s->d[i]));
                    size = fmax(size, fabs(s->Din[i]));
                }
            memcpy(s->d, s->Din, sizeof(double) * nl);
            if (delta <= NEWTON_RTOL * size || delta == 0.0 ||
                (delta >= last && delta <= 1e3 * NEWTON_RTOL * fmax(size, 1e-300)))
                done = 1;
            last = delta;
        }
        if (!done)
            return bg_fail(m, "the nonlinear resistor law(s) of %s did not converge in %d "
                              "Newton iterations at t = %.6g s (last change %.3g in their "
                              "inputs): the algebraic loop through them may have no "
                              "solution or several, or the state is far from the last one",
                           BGD_NL_NAMES, NEWTON_MAX_ITERATIONS, t, delta);
        memcpy(s->start, s->d, sizeof(double) * nl);
        s->have_start = 1;
    }
    if (xdot) {
        int o = s->nx;
        for (int i = 0; i < BGD_NKIN; i++) xdot[o + i] = s->w[BGD_KIN_ROW[i]];
        o += BGD_NKIN;
        for (int k = 0; k < BGD_NWORK; k++) {
            double p = 0.0;
            for (int j = BGD_WORK_OFF[k]; j < BGD_WORK_OFF[k + 1]; j++)
                p += s->w[BGD_WORK_E[j]] * s->w[BGD_WORK_F[j]];
            xdot[o + k] = p;
        }
        for (int i = 0; i < BG_NX; i++)
            if (!isfinite(xdot[i]))
                return bg_fail(m, "der(%s) is not finite", BG_X_NAME[i]);
    }
    return 0;
}

int bg_engine_derivatives(bg_inst *m, double t, const double *x, double *xdot) {
    return evaluate(m, t, x, xdot);
}

int bg_engine_full(bg_inst *m, double t, const double *x, double *w, double *U2) {
    dense_ws *s = (dense_ws *)m->engine;
    if (evaluate(m, t, x, m->xdot)) return 1;
    memcpy(w, s->w, sizeof(double) * BGD_NVAR);
    memcpy(U2, s->U2, sizeof(double) * s->nu2);
    return 0;
}
