/* The co-simulation solver of an exported FMU: inputs held over fmi2DoStep's
   communication step, the states advanced by
   - BG_CS_SOLVER 0: Dormand and Prince's embedded 5(4) pair with step-size control
     (rtol = the tolerance of fmi2SetupExperiment, else the export's; atol_i = rtol
     times the state's nominal magnitude, as fmpy's CVode takes them), the steps ending
     exactly at the communication point, the last step size carried to the next call;
   - BG_CS_SOLVER 1: the classical Runge-Kutta method of order 4 with equal steps no
     longer than BG_CS_STEP (one per communication step when BG_CS_STEP is 0).
   Either ends a step at each of the sources' breaks inside the communication step
   (BG_BREAKS) and starts the next at the first float after the jump (BG_STARTS).
   A failed evaluation at a trial stage shrinks the step (a state outside the model's
   domain); one that persists down to the smallest step stops the run with the engine's
   message, the states left at the last accepted step. */
#include <math.h>
#include <string.h>

#include "bg_runtime.h"

typedef struct {
    double *k[7], *y, *ynew, *err;
} solver_ws;

int bg_solver_new(bg_inst *m) {
    solver_ws *s = (solver_ws *)bg_alloc(m, 1, sizeof(solver_ws));
    if (!s) return 1;
    m->solver = s;
    for (int i = 0; i < 7; i++)
        if (!(s->k[i] = (double *)bg_alloc(m, BG_NX, sizeof(double)))) return 1;
    s->y = (double *)bg_alloc(m, BG_NX, sizeof(double));
    s->ynew = (double *)bg_alloc(m, BG_NX, sizeof(double));
    s->err = (double *)bg_alloc(m, BG_NX, sizeof(double));
    return !s->y || !s->ynew || !s->err;
}

void bg_solver_free(bg_inst *m) {
    solver_ws *s = (solver_ws *)m->solver;
    if (!s) return;
    for (int i = 0; i < 7; i++) bg_free(m, s->k[i]);
    bg_free(m, s->y);
    bg_free(m, s->ynew);
    bg_free(m, s->err);
    bg_free(m, s);
    m->solver = NULL;
}

static int f(bg_inst *m, double t, const double *x, double *dx) {
    if (bg_engine_derivatives(m, t, x, dx)) return 1;
    for (int i = 0; i < BG_NX; i++)
        if (!isfinite(dx[i])) return bg_fail(m, "der(%s) is not finite", BG_X_NAME[i]);
    return 0;
}

/* -- classical Runge-Kutta, fixed steps ------------------------------------------- */
static int rk4(bg_inst *m, double t_end) {
    solver_ws *s = (solver_ws *)m->solver;
    int n = 1, nx = BG_NX;
    double span = t_end - m->t;
    if (span <= 0.0) return 0;
    if (BG_CS_STEP > 0.0) n = (int)ceil(span / BG_CS_STEP - 1e-9);
    if (n < 1) n = 1;
    double h = span / n, t0 = m->t;
    double *x = m->x, *y = s->y, **k = s->k;
    for (int step = 0; step < n; step++) {
        double t = t0 + step * h;
        if (f(m, t, x, k[0])) return 1;
        for (int i = 0; i < nx; i++) y[i] = x[i] + 0.5 * h * k[0][i];
        if (f(m, t + 0.5 * h, y, k[1])) return 1;
        for (int i = 0; i < nx; i++) y[i] = x[i] + 0.5 * h * k[1][i];
        if (f(m, t + 0.5 * h, y, k[2])) return 1;
        for (int i = 0; i < nx; i++) y[i] = x[i] + h * k[2][i];
        if (f(m, t + h, y, k[3])) return 1;
        for (int i = 0; i < nx; i++)
            x[i] += h / 6.0 * (k[0][i] + 2.0 * k[1][i] + 2.0 * k[2][i] + k[3][i]);
        m->t = (step == n - 1) ? t_end : t + h;
    }
    return 0;
}

/* -- Dormand-Prince 5(4) -------------------------------------------------------------- */
static const double C[7] = {0.0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1.0, 1.0};
static const double A[7][6] = {
    {0, 0, 0, 0, 0, 0},
    {1.0 / 5, 0, 0, 0, 0, 0},
    {3.0 / 40, 9.0 / 40, 0, 0, 0, 0},
    {44.0 / 45, -56.0 / 15, 32.0 / 9, 0, 0, 0},
    {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729, 0, 0},
    {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656, 0},
    {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84}};
/* the error weights: the 5th-order weights (row 6 of A) minus the 4th-order ones */
static const double E[7] = {71.0 / 57600, 0.0, -71.0 / 16695, 71.0 / 1920,
                            -17253.0 / 339200, 22.0 / 525, -1.0 / 40};

static double scaled_norm(const double *v, const double *a, const double *b, double rtol) {
    double s = 0.0;
    for (int i = 0; i < BG_NX; i++) {
        double sc = rtol * BG_NOMINAL[i] + rtol * fmax(fabs(a[i]), fabs(b[i]));
        double e = v[i] / sc;
        s += e * e;
    }
    return BG_NX ? sqrt(s / BG_NX) : 0.0;
}

static int dopri5(bg_inst *m, double t_end) {
    solver_ws *s = (solver_ws *)m->solver;
    double rtol = m->tolerance, t = m->t, *x = m->x, **k = s->k;
    int nx = BG_NX;
    if (t_end <= t) return 0;
    if (f(m, t, x, k[0])) return 1;
    double h = m->step_guess;
    if (!(h > 0.0)) {                  /* Hairer's first guess, from |x| and |dx/dt| */
        double d0 = scaled_norm(x, x, x, rtol), d1 = scaled_norm(k[0], x, x, rtol);
        h = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
        h = fmin(h, t_end - t);
    }
    int rejected = 0, rejections = 0;
    while (t < t_end) {
        double h_min = 16.0 * (nextafter(fabs(t), INFINITY) - fabs(t));
        double left = t_end - t;
        if (left < h_min) {             /* a few ulps (a communication point just after a
                                           break's start): one Euler step over them */
            for (int i = 0; i < nx; i++) x[i] += left * k[0][i];
            m->t = t_end;
            return 0;
        }
        double hs = fmin(h, left);
        int last = hs >= left;
        if (!last && left - hs < h_min) {
            /* a sliver would be left: stretch the step to the end, except after a
               rejection, when the step that failed would be taken again (for ever):
               then half of what is left, or give up */
            if (!rejected) { hs = left; last = 1; }
            else if (0.5 * left >= h_min) hs = 0.5 * left;
            else hs = 0.0;
        }
        if (hs < h_min || rejections > 200)
            return bg_fail(m, "the step size fell below its floor (%g s) at t = %.17g s "
                              "(%d steps rejected in a row)", h_min, t, rejections);
        /* the stages */
        int bad = 0;
        for (int st = 1; st < 7 && !bad; st++) {
            for (int i = 0; i < nx; i++) {
                double acc = 0.0;
                for (int j = 0; j < st; j++) acc += A[st][j] * k[j][i];
                s->y[i] = x[i] + hs * acc;
            }
            if (f(m, t + C[st] * hs, s->y, k[st])) bad = 1;
        }
        if (bad) {                      /* outside the model's domain: a smaller step */
            h = 0.25 * hs;
            rejected = 1;
            rejections++;
            if (h < h_min) return 1;    /* (m->msg: the engine's reason) */
            continue;
        }
        /* y (row 6) is the 5th-order solution, k[6] its derivative */
        for (int i = 0; i < nx; i++) {
            double e = 0.0;
            for (int j = 0; j < 7; j++) e += E[j] * k[j][i];
            s->err[i] = hs * e;
        }
        double err = scaled_norm(s->err, x, s->y, rtol);
        if (err <= 1.0) {
            double factor = err == 0.0 ? 10.0 : fmin(10.0, 0.9 * pow(err, -0.2));
            if (rejected) factor = fmin(1.0, factor);
            t = last ? t_end : t + hs;
            memcpy(x, s->y, sizeof(double) * nx);
            memcpy(k[0], k[6], sizeof(double) * nx);
            m->t = t;
            /* the next step size: the controller's, or the one before a last step that
               was cut short to end at the communication point */
            double proposal = hs * factor;
            m->step_guess = (last && hs < h) ? fmax(h, proposal) : proposal;
            h = proposal;
            rejected = 0;
            rejections = 0;
        } else {
            h = hs * fmax(0.2, 0.9 * pow(err, -0.2));
            rejected = 1;
            rejections++;
        }
    }
    return 0;
}

int bg_next_break(double t) {
    int lo = 0, hi = BG_NBREAKS;        /* the first break > t */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (BG_BREAKS[mid] <= t) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* to t_end, each step that meets a source's break ending at its last float before the
   jump and the next starting at its first after it (as a run of the package does), so
   that no stage sees the other side's value */
int bg_solver_advance(bg_inst *m, double t_end) {
    for (;;) {
        int k = bg_next_break(m->t);
        if (k > 0 && m->t < BG_STARTS[k - 1]) {   /* (a step ended at a break before) */
            if (BG_STARTS[k - 1] >= t_end) { m->t = t_end; return 0; }
            m->t = BG_STARTS[k - 1];
            continue;
        }
        double stop = k < BG_NBREAKS && BG_BREAKS[k] < t_end ? BG_BREAKS[k] : t_end;
        if (BG_CS_SOLVER == 1 ? rk4(m, stop) : dopri5(m, stop)) return 1;
        if (stop >= t_end || BG_STARTS[k] >= t_end) { m->t = t_end; return 0; }
        m->t = BG_STARTS[k];                 /* (> stop: every pass moves on) */
    }
}
