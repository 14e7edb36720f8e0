/* The runtime of an FMU exported by vector-bondgraph (bondgraph.fmu).

   Three parts meet here:
   - the generated model file (model.c): sizes, start values, the variables' roles, the
     sources' values as functions of time, parameters and inputs, and the engine's data;
   - one engine, chosen by the exporter: bg_dense.c (the dense reduction of any plain
     bond graph, bondgraph/reduction.py) or bg_fused.c (the compiled one-call evaluation
     of a mechanism, bondgraph/_sparse_kernels.py and _rk_kernels.py);
   - bg_fmi2.c (the FMI 2.0 functions) and bg_solver.c (the co-simulation solver).

   Value references: states [0, NX), their derivatives [NX, 2 NX), parameters
   [2 NX, 2 NX + NP), inputs, then outputs. */
#ifndef BG_RUNTIME_H
#define BG_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include "fmi2Functions.h"

typedef struct bg_inst bg_inst;

/* -- what model.c defines ------------------------------------------------------------- */
extern const char BG_GUID[];
extern const char BG_MODEL_NAME[];
extern const int BG_NX;                 /* state components */
extern const int BG_NP;                 /* parameters */
extern const int BG_NU;                 /* inputs */
extern const int BG_NY;                 /* outputs */
extern const int BG_NW;                 /* bond variables (efforts, then flows) */
extern const int BG_NU2;                /* constraint effort components (U_2) */
extern const double BG_X0[];            /* start values of the states */
extern const double BG_NOMINAL[];       /* nominal magnitudes of the states */
extern const double BG_P0[];            /* parameter values at export */
extern const double BG_U0[];            /* start values of the inputs */
extern const unsigned char BG_P_TUNABLE[]; /* 1: settable; 0: built into the structure */
extern const unsigned char BG_P_POSITIVE[];/* 1: must be > 0 */
extern const char *const BG_P_NAME[];
extern const char *const BG_X_NAME[];
/* output k is the sum over its terms [BG_Y_OFF[k], BG_Y_OFF[k + 1]) of BG_Y_COEF times
   the quantity BG_Y_INDEX of kind BG_Y_KIND: 0 state, 1 bond variable, 2 U_2 */
extern const int BG_Y_OFF[];
extern const int BG_Y_KIND[];
extern const int BG_Y_INDEX[];
extern const double BG_Y_COEF[];
extern const int BG_CS_SOLVER;          /* 0 adaptive Dormand-Prince 5(4), 1 fixed-step RK4 */
extern const double BG_CS_STEP;         /* RK4's largest step (s); 0: one per doStep */
extern const double BG_CS_RTOL;         /* the adaptive solver's rtol without a tolerance */
/* where a source jumps or has a kink inside the export's experiment span (s,
   increasing): the last float of the value before (BG_BREAKS: co-simulation steps end
   there) and the first of the value after (BG_STARTS: the next step starts there; a
   model-exchange tool's time events) */
extern const int BG_NBREAKS;
extern const double BG_BREAKS[];
extern const double BG_STARTS[];
/* the index of the first break after t, or BG_NBREAKS */
int bg_next_break(double t);

/* U_1 and dU_1/dt at time t (s) from the parameters p and inputs u; 0, or 1 when a
   value is not finite (m->msg then names the source). */
int bg_sources(bg_inst *m, double t, const double *p, const double *u, double *U1,
               double *dU1);

/* -- what the engine defines ---------------------------------------------------------- */
int bg_engine_new(bg_inst *m);   /* m->engine; 0 or 1 (out of memory) */
void bg_engine_free(bg_inst *m);
void bg_engine_reset(bg_inst *m);/* the parameters changed (or a reset) */
/* dX/dt at (t, x): 0, or 1 with m->msg saying why not */
int bg_engine_derivatives(bg_inst *m, double t, const double *x, double *xdot);
/* every bond variable w (BG_NW) and U_2 (BG_NU2) at (t, x): 0 or 1 */
int bg_engine_full(bg_inst *m, double t, const double *x, double *w, double *U2);

/* -- the instance ------------------------------------------------------------------- */
enum { BG_INSTANTIATED, BG_INITIALIZATION, BG_EVENT, BG_CONTINUOUS, BG_STEP_COMPLETE,
       BG_TERMINATED, BG_FAILED };

struct bg_inst {
    fmi2CallbackFunctions cb;
    char *name;
    fmi2Type type;
    int logging;
    int mode;
    double t;
    double tolerance;                   /* rtol of the co-simulation solver */
    double *x, *xdot, *p, *u, *w, *U2;
    int xdot_valid, full_valid;         /* caches of the current (t, x, p, u) */
    void *engine;
    void *solver;                       /* bg_solver.c's workspace */
    double step_guess;                  /* the adaptive solver's next step size (s) */
    char msg[2048];
};

void *bg_alloc(bg_inst *m, size_t count, size_t size);    /* zeroed; NULL: no memory */
void bg_free(bg_inst *m, void *p);
int bg_fail(bg_inst *m, const char *fmt, ...);            /* writes m->msg; returns 1 */

/* -- the co-simulation solver (bg_solver.c) ---------------------------------------- */
int bg_solver_new(bg_inst *m);
void bg_solver_free(bg_inst *m);
/* advance m->x from m->t to t_end; 0, or 1 with m->msg (m->t, m->x: the last good step) */
int bg_solver_advance(bg_inst *m, double t_end);

#endif
