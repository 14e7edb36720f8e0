/* The data of the dense engine (bg_dense.c), written by the exporter into model.c:
   the junction tableau of bondgraph/junction.py (JunctionLayout) and the fields' laws
   of bondgraph/reduction.py as C functions. Names follow those modules. */
#ifndef BG_DENSE_H
#define BG_DENSE_H

#include "bg_runtime.h"

/* the junction equations A w = 0: COO entries (row, bond variable, constant value; the
   modulated entries hold 0 and are written from the moduli) */
extern const int BGD_NEQ, BGD_NVAR, BGD_NIMP, BGD_NNZ;
extern const int BGD_ROW[], BGD_COL[];
extern const double BGD_BASE[];
extern const int BGD_COL_U[], BGD_COL_I[];  /* per variable: its unknown / imposed column */
extern const int BGD_IMP[];                 /* the imposed variables, in v's order */
extern const int BGD_UNK[];                 /* the unknown variables */
extern const int BGD_REC[];                 /* the received variables: X, L, E, C */
extern const int BGD_IMP_OFF[6];            /* v's groups Z, L, U1, U2, E (offsets, end) */
extern const int BGD_REC_OFF[5];            /* the received groups X, L, E, C */
/* the two-ports: block k's entries start at BGD_MOD_START[k] of A's entries (row block
   n2 x n1, then the transposed block); its modulus is at BGD_MOD_OFF[k] of the moduli */
extern const int BGD_NMODB, BGD_NMODV, BGD_MOD_DYNAMIC;
extern const int BGD_MOD_START[], BGD_MOD_N2[], BGD_MOD_N1[], BGD_MOD_OFF[];
extern const int BGD_MOD_IS_DYNAMIC[];      /* per block: depends on the state */
/* the fields */
extern const int BGD_NZ, BGD_NL, BGD_NE, BGD_NU1, BGD_NU2;
extern const int BGD_NNL, BGD_NL_OFF[], BGD_NL_DIM[];   /* the nonlinear resistors */
extern const int BGD_NKIN, BGD_KIN_ROW[];               /* kinematic rates: bond flows */
extern const int BGD_NWORK, BGD_WORK_OFF[], BGD_WORK_E[], BGD_WORK_F[];
extern const int BGD_BRANCH;                /* 0: no U_2; 14 or 15: Eq. (14) / (15) */
extern const int BGD_STAB;                  /* Baumgarte's terms in Eq. (15) */
extern const double BGD_ALPHA2, BGD_BETA2;  /* 2 alpha, beta^2 */
extern const char BGD_L_NAMES[], BGD_NL_NAMES[], BGD_E_NAMES[], BGD_U2_NAMES[];

/* every two-port's modulus (row-major, blocks in order) at the state x */
int bgd_moduli(bg_inst *m, const double *p, const double *x, double *mod);
/* their rates along the motion (the kinematic states' rates kin) */
int bgd_moduli_rates(bg_inst *m, const double *p, const double *x, const double *kin,
                     double *out);
/* co-energies Z and tangents F (BGD_NZ x BGD_NZ, zeroed by the caller) of the energy
   states X */
int bgd_fields(bg_inst *m, const double *p, const double *X, double *Z, double *F);
/* the linear resistors' R (BGD_NL x BGD_NL, zeroed by the caller; conductances
   inverted) */
int bgd_resistors(bg_inst *m, const double *p, double *R);
/* nonlinear resistor k: its law's value and Jacobian at its input d */
int bgd_rlaw(bg_inst *m, int k, const double *p, const double *d, double *value,
             double *jac);
/* R_E of the Euler junction structures (BGD_NE x BGD_NE, zeroed by the caller) */
int bgd_euler(bg_inst *m, const double *x, double *RE);

#endif
