/* The data of the fused engine (bg_fused.c), written by the exporter into model.c: the
   arrays of bondgraph._fastrk.CompiledLoop.pack (the compiled right-hand side's D, in
   its order; see bondgraph/_rk_kernels.py fused_rhs) at the pivot order of the export,
   and the element library's kernels as C functions (bg_program, bg_kin_rate). */
#ifndef BG_FUSED_H
#define BG_FUSED_H

#include <stdint.h>

#include "bg_runtime.h"

/* D's arrays (2-D ones row-major, with their shapes) */
extern const int64_t BGF_DIMS[7];       /* n_b, n_mod, n_phi, n_u2, rate_terms, stab, n_kin */
extern const int64_t BGF_XI[];
extern const int64_t BGF_V_DESC[], BGF_V_NDESC, BGF_V_INTS[];
extern const double BGF_V_FLTS[];
extern const int64_t BGF_R_DESC[], BGF_R_NDESC, BGF_R_INTS[];
extern const double BGF_R_FLTS[];
extern const int64_t BGF_DEST_P[], BGF_RI[];
extern const int64_t BGF_COPY_DST[], BGF_COPY_SRC[], BGF_NCOPY;
extern const int64_t BGF_Q_STATE[], BGF_Q_FLOW[], BGF_Q_DST[];
extern const int64_t BGF_NQ, BGF_QD, BGF_QK;           /* q_state: NQ x QD, q_flow: NQ x QK */
extern const int64_t BGF_W1_KIN[];
extern const int64_t BGF_I_ALL[], BGF_IO[];
extern const double BGF_F_ALL[];
extern const int64_t BGF_FO[];
extern const int64_t BGF_S_INTS[], BGF_S_OFF[];
extern const double BGF_T_COEF[];
extern const double BGF_SRC[];
extern const int64_t BGF_NSRC;
extern const double BGF_AB[2];          /* 2 alpha, beta^2 */
extern const int64_t BGF_W2_X[], BGF_NW2X;
extern const int64_t BGF_WORK_E[], BGF_WORK_F[], BGF_WORK_OFF[], BGF_NWORK;
extern const int64_t BGF_C2;            /* U_2's offset in the acceleration stage's y */
/* the element owning each modulus entry (an index into BGF_MOD_NAME), for messages */
extern const int64_t BGF_MOD_OWNER[];
extern const char *const BGF_MOD_NAME[];
/* the affine Phi beside the program (couplings): Phi[DEST[k]] = sum_j COEF[k, j]
   x[IDX[k, j]] + CONST[k], k < NPHIA, j < PHIA_M */
extern const int64_t BGF_NPHIA, BGF_PHIA_M, BGF_PHIA_DEST[], BGF_PHIA_IDX[];
extern const double BGF_PHIA_COEF[], BGF_PHIA_CONST[];
/* the element library's program (elements/kernels/compiled.py program): frames of the n bodies
   from states (n x 7), with rate their rates from rates (n x 7), then every group of
   desc (ndesc x 14) writing its kernels' values at their destinations in out0 / out1 */
void bg_program(int64_t n, const double *states, const double *rates, int rate,
                const int64_t *desc, int64_t ndesc, const int64_t *ints, const double *flts,
                double *out0, double *out1);
/* the vectorised kinematic rate (the quaternion rates): out (nq x qd) from the states
   q (nq x qd) and flows om (nq x qk) */
void bg_kin_rate(int64_t nq, int64_t qd, int64_t qk, const double *q, const double *om,
                 double *out);

#endif
