/* The FMI 2.0 functions of an FMU exported by vector-bondgraph: model exchange and
   co-simulation in one binary (see bg_runtime.h for the parts and the value
   references). Errors are logged through the environment's logger (always, whatever the
   debug setting) and returned as fmi2Error; a run that cannot go on is never reported
   as fmi2OK. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bg_runtime.h"

/* -- memory and messages -------------------------------------------------------------- */
void *bg_alloc(bg_inst *m, size_t count, size_t size) {
    if (count == 0) count = 1;          /* (a valid pointer also for empty arrays) */
    return m->cb.allocateMemory(count, size);
}

void bg_free(bg_inst *m, void *p) {
    if (p) m->cb.freeMemory(p);
}

int bg_fail(bg_inst *m, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->msg, sizeof m->msg, fmt, ap);
    va_end(ap);
    return 1;
}

static void say(bg_inst *m, fmi2Status status, const char *category, const char *text) {
    if (m->cb.logger && (m->logging || status >= fmi2Warning))
        m->cb.logger(m->cb.componentEnvironment, m->name, status, category, "%s", text);
}

static fmi2Status error(bg_inst *m, const char *fmt, ...) {
    char buf[2304];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    say(m, fmi2Error, "logStatusError", buf);
    return fmi2Error;
}

/* value references */
#define VR_DER (BG_NX)
#define VR_PAR (2 * BG_NX)
#define VR_IN (2 * BG_NX + BG_NP)
#define VR_OUT (2 * BG_NX + BG_NP + BG_NU)
#define VR_END (2 * BG_NX + BG_NP + BG_NU + BG_NY)

static void invalidate(bg_inst *m) {
    m->xdot_valid = 0;
    m->full_valid = 0;
}

static int derivatives(bg_inst *m) {
    if (m->xdot_valid) return 0;
    if (bg_engine_derivatives(m, m->t, m->x, m->xdot)) return 1;
    m->xdot_valid = 1;
    return 0;
}

static int full(bg_inst *m) {
    if (m->full_valid) return 0;
    if (bg_engine_full(m, m->t, m->x, m->w, m->U2)) return 1;
    m->full_valid = 1;
    return 0;
}

static fmi2Status failed(bg_inst *m, const char *what) {
    return error(m, "%s at t = %.17g s: %s", what, m->t, m->msg);
}

/* -- instances ---------------------------------------------------------------------- */
const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }

const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n,
                               const fmi2String categories[]) {
    (void)n;
    (void)categories;
    ((bg_inst *)c)->logging = on != 0;
    return fmi2OK;
}

static void start_values(bg_inst *m) {
    memcpy(m->x, BG_X0, sizeof(double) * BG_NX);
    memcpy(m->p, BG_P0, sizeof(double) * BG_NP);
    memcpy(m->u, BG_U0, sizeof(double) * BG_NU);
    m->t = 0.0;
    m->tolerance = BG_CS_RTOL;
    m->step_guess = 0.0;
    invalidate(m);
}

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid,
                              fmi2String resources, const fmi2CallbackFunctions *cb,
                              fmi2Boolean visible, fmi2Boolean logging) {
    (void)resources;
    (void)visible;
    if (!cb || !cb->allocateMemory || !cb->freeMemory) return NULL;
    bg_inst *m = (bg_inst *)cb->allocateMemory(1, sizeof(bg_inst));
    if (!m) return NULL;
    m->cb = *cb;
    m->logging = logging != 0;
    m->type = type;
    m->name = (char *)bg_alloc(m, strlen(name ? name : "") + 1, 1);
    if (m->name) strcpy(m->name, name ? name : "");
    if (!guid || strcmp(guid, BG_GUID) != 0) {
        error(m, "fmi2Instantiate: GUID %s does not match this binary's %s (the "
                 "modelDescription.xml and the binary come from different exports)",
              guid ? guid : "(none)", BG_GUID);
        bg_free(m, m->name);
        cb->freeMemory(m);
        return NULL;
    }
    m->x = (double *)bg_alloc(m, BG_NX, sizeof(double));
    m->xdot = (double *)bg_alloc(m, BG_NX, sizeof(double));
    m->p = (double *)bg_alloc(m, BG_NP, sizeof(double));
    m->u = (double *)bg_alloc(m, BG_NU, sizeof(double));
    m->w = (double *)bg_alloc(m, BG_NW, sizeof(double));
    m->U2 = (double *)bg_alloc(m, BG_NU2, sizeof(double));
    if (!m->name || !m->x || !m->xdot || !m->p || !m->u || !m->w || !m->U2 ||
        bg_engine_new(m) || (type == fmi2CoSimulation && bg_solver_new(m))) {
        error(m, "fmi2Instantiate: out of memory");
        return NULL;
    }
    start_values(m);
    m->mode = BG_INSTANTIATED;
    return m;
}

void fmi2FreeInstance(fmi2Component c) {
    bg_inst *m = (bg_inst *)c;
    if (!m) return;
    bg_engine_free(m);
    bg_solver_free(m);
    bg_free(m, m->x);
    bg_free(m, m->xdot);
    bg_free(m, m->p);
    bg_free(m, m->u);
    bg_free(m, m->w);
    bg_free(m, m->U2);
    bg_free(m, m->name);
    m->cb.freeMemory(m);
}

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined,
                               fmi2Real tolerance, fmi2Real startTime,
                               fmi2Boolean stopTimeDefined, fmi2Real stopTime) {
    bg_inst *m = (bg_inst *)c;
    (void)stopTimeDefined;
    (void)stopTime;
    if (toleranceDefined) {
        if (!(tolerance > 0.0) || !isfinite(tolerance))
            return error(m, "fmi2SetupExperiment: tolerance %g must be positive", tolerance);
        m->tolerance = tolerance;
    }
    m->t = startTime;
    invalidate(m);
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
    ((bg_inst *)c)->mode = BG_INITIALIZATION;
    return fmi2OK;
}

fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
    bg_inst *m = (bg_inst *)c;
    /* the initial state is evaluated here, so that a model that cannot start says why
       before the first step */
    if (derivatives(m)) {
        m->mode = BG_FAILED;
        return failed(m, "the initial state cannot be evaluated");
    }
    m->mode = m->type == fmi2ModelExchange ? BG_EVENT : BG_STEP_COMPLETE;
    return fmi2OK;
}

fmi2Status fmi2Terminate(fmi2Component c) {
    ((bg_inst *)c)->mode = BG_TERMINATED;
    return fmi2OK;
}

fmi2Status fmi2Reset(fmi2Component c) {
    bg_inst *m = (bg_inst *)c;
    start_values(m);
    bg_engine_reset(m);
    m->mode = BG_INSTANTIATED;
    return fmi2OK;
}

/* -- values ----------------------------------------------------------------------- */
fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       fmi2Real value[]) {
    bg_inst *m = (bg_inst *)c;
    for (size_t i = 0; i < nvr; i++) {
        unsigned int r = vr[i];
        if (r < (unsigned)VR_DER) {
            value[i] = m->x[r];
        } else if (r < (unsigned)VR_PAR) {
            if (derivatives(m)) return failed(m, "the state derivative cannot be evaluated");
            value[i] = m->xdot[r - VR_DER];
        } else if (r < (unsigned)VR_IN) {
            value[i] = m->p[r - VR_PAR];
        } else if (r < (unsigned)VR_OUT) {
            value[i] = m->u[r - VR_IN];
        } else if (r < (unsigned)VR_END) {
            int k = (int)r - VR_OUT;
            double y = 0.0;
            for (int q = BG_Y_OFF[k]; q < BG_Y_OFF[k + 1]; q++) {
                int kind = BG_Y_KIND[q], j = BG_Y_INDEX[q];
                double v;
                if (kind == 0) {
                    v = m->x[j];
                } else {
                    if (full(m)) return failed(m, "the outputs cannot be evaluated");
                    v = kind == 1 ? m->w[j] : m->U2[j];
                }
                y += BG_Y_COEF[q] * v;
            }
            value[i] = y;
        } else {
            return error(m, "fmi2GetReal: no variable has value reference %u", r);
        }
    }
    return fmi2OK;
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       const fmi2Real value[]) {
    bg_inst *m = (bg_inst *)c;
    int params = 0;
    for (size_t i = 0; i < nvr; i++) {
        unsigned int r = vr[i];
        double v = value[i];
        if (!isfinite(v))
            return error(m, "fmi2SetReal: value reference %u: %g is not finite", r, v);
        if (r < (unsigned)VR_DER) {
            m->x[r] = v;
        } else if (r < (unsigned)VR_PAR) {
            return error(m, "fmi2SetReal: der(%s) is computed, it cannot be set",
                         BG_X_NAME[r - VR_DER]);
        } else if (r < (unsigned)VR_IN) {
            int k = (int)r - VR_PAR;
            if (!BG_P_TUNABLE[k]) {
                if (v == m->p[k]) continue;     /* (a master writing back its value) */
                return error(m, "fmi2SetReal: parameter %s is built into the exported "
                                "structure (its value %.17g was fixed at export); export "
                                "the model again with another value", BG_P_NAME[k], m->p[k]);
            }
            if (BG_P_POSITIVE[k] && !(v > 0.0))
                return error(m, "fmi2SetReal: parameter %s must be positive, got %g",
                             BG_P_NAME[k], v);
            m->p[k] = v;
            params = 1;
        } else if (r < (unsigned)VR_OUT) {
            m->u[r - VR_IN] = v;
        } else {
            return error(m, "fmi2SetReal: value reference %u is not settable (an output "
                            "or no variable)", r);
        }
    }
    if (params) bg_engine_reset(m);
    invalidate(m);
    return fmi2OK;
}

static fmi2Status none(bg_inst *m, size_t nvr, const char *what) {
    if (nvr == 0) return fmi2OK;
    return error(m, "%s: this FMU has no variables of that type", what);
}

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Integer value[]) {
    (void)vr; (void)value;
    return none((bg_inst *)c, nvr, "fmi2GetInteger");
}

fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Boolean value[]) {
    (void)vr; (void)value;
    return none((bg_inst *)c, nvr, "fmi2GetBoolean");
}

fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         fmi2String value[]) {
    (void)vr; (void)value;
    return none((bg_inst *)c, nvr, "fmi2GetString");
}

fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Integer value[]) {
    (void)vr; (void)value;
    return none((bg_inst *)c, nvr, "fmi2SetInteger");
}

fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Boolean value[]) {
    (void)vr; (void)value;
    return none((bg_inst *)c, nvr, "fmi2SetBoolean");
}

fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         const fmi2String value[]) {
    (void)vr; (void)value;
    return none((bg_inst *)c, nvr, "fmi2SetString");
}

/* -- FMU states: time, states, parameters, inputs ------------------------------------ */
typedef struct {
    double t, step_guess;
    int mode;
    double data[1];                     /* x, p, u */
} saved_state;

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *state) {
    bg_inst *m = (bg_inst *)c;
    saved_state *s = *state ? (saved_state *)*state :
        (saved_state *)bg_alloc(m, 1, sizeof(saved_state) +
                                sizeof(double) * (size_t)(BG_NX + BG_NP + BG_NU));
    if (!s) return error(m, "fmi2GetFMUstate: out of memory");
    s->t = m->t;
    s->step_guess = m->step_guess;
    s->mode = m->mode;
    memcpy(s->data, m->x, sizeof(double) * BG_NX);
    memcpy(s->data + BG_NX, m->p, sizeof(double) * BG_NP);
    memcpy(s->data + BG_NX + BG_NP, m->u, sizeof(double) * BG_NU);
    *state = s;
    return fmi2OK;
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state) {
    bg_inst *m = (bg_inst *)c;
    saved_state *s = (saved_state *)state;
    if (!s) return error(m, "fmi2SetFMUstate: no state given");
    m->t = s->t;
    m->step_guess = s->step_guess;
    m->mode = s->mode;
    memcpy(m->x, s->data, sizeof(double) * BG_NX);
    memcpy(m->p, s->data + BG_NX, sizeof(double) * BG_NP);
    memcpy(m->u, s->data + BG_NX + BG_NP, sizeof(double) * BG_NU);
    bg_engine_reset(m);
    invalidate(m);
    return fmi2OK;
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *state) {
    if (state && *state) {
        bg_free((bg_inst *)c, *state);
        *state = NULL;
    }
    return fmi2OK;
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t *size) {
    (void)state; (void)size;
    return error((bg_inst *)c, "fmi2SerializedFMUstateSize: not supported "
                               "(canSerializeFMUstate is false)");
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[],
                                 size_t size) {
    (void)state; (void)bytes; (void)size;
    return error((bg_inst *)c, "fmi2SerializeFMUstate: not supported");
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size,
                                   fmi2FMUstate *state) {
    (void)bytes; (void)size; (void)state;
    return error((bg_inst *)c, "fmi2DeSerializeFMUstate: not supported");
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[],
                                        size_t nu, const fmi2ValueReference z[], size_t nz,
                                        const fmi2Real dv[], fmi2Real dz[]) {
    (void)u; (void)nu; (void)z; (void)nz; (void)dv; (void)dz;
    return error((bg_inst *)c, "fmi2GetDirectionalDerivative: not provided "
                               "(providesDirectionalDerivative is false)");
}

/* -- model exchange ----------------------------------------------------------------- */
fmi2Status fmi2EnterEventMode(fmi2Component c) {
    ((bg_inst *)c)->mode = BG_EVENT;
    return fmi2OK;
}

fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *info) {
    /* the next time event: the float after the end of the first of the sources'
       breaks ahead (a step's own time; else the first where the value is no longer the
       one before), at least 64 ulps ahead: a tool cannot integrate to one nearer
       (fmpy's CVode: 'tout too close to t0'), and its error control meets that jump */
    double t = ((bg_inst *)c)->t, a = fmax(fabs(t), 1.0);
    double soon = t + 64.0 * (nextafter(a, INFINITY) - a);
    int k = bg_next_break(t);
    while (k < BG_NBREAKS && nextafter(BG_BREAKS[k], INFINITY) <= soon) k++;
    info->newDiscreteStatesNeeded = fmi2False;
    info->terminateSimulation = fmi2False;
    info->nominalsOfContinuousStatesChanged = fmi2False;
    info->valuesOfContinuousStatesChanged = fmi2False;
    info->nextEventTimeDefined = k < BG_NBREAKS ? fmi2True : fmi2False;
    info->nextEventTime = k < BG_NBREAKS ? nextafter(BG_BREAKS[k], INFINITY) : 0.0;
    return fmi2OK;
}

fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) {
    ((bg_inst *)c)->mode = BG_CONTINUOUS;
    return fmi2OK;
}

fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noSetFMUStatePrior,
                                       fmi2Boolean *enterEventMode,
                                       fmi2Boolean *terminateSimulation) {
    (void)c; (void)noSetFMUStatePrior;
    *enterEventMode = fmi2False;
    *terminateSimulation = fmi2False;
    return fmi2OK;
}

fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time) {
    bg_inst *m = (bg_inst *)c;
    m->t = time;
    invalidate(m);
    return fmi2OK;
}

fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx) {
    bg_inst *m = (bg_inst *)c;
    if (nx != (size_t)BG_NX)
        return error(m, "fmi2SetContinuousStates: %zu states given, the model has %d", nx,
                     BG_NX);
    memcpy(m->x, x, sizeof(double) * nx);
    invalidate(m);
    return fmi2OK;
}

fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real derivatives_[], size_t nx) {
    bg_inst *m = (bg_inst *)c;
    if (nx != (size_t)BG_NX)
        return error(m, "fmi2GetDerivatives: %zu asked, the model has %d states", nx, BG_NX);
    if (derivatives(m)) return failed(m, "the state derivative cannot be evaluated");
    memcpy(derivatives_, m->xdot, sizeof(double) * nx);
    return fmi2OK;
}

fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real indicators[], size_t ni) {
    (void)indicators;
    if (ni != 0) return error((bg_inst *)c, "fmi2GetEventIndicators: the model has none");
    return fmi2OK;
}

fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
    bg_inst *m = (bg_inst *)c;
    if (nx != (size_t)BG_NX)
        return error(m, "fmi2GetContinuousStates: %zu asked, the model has %d", nx, BG_NX);
    memcpy(x, m->x, sizeof(double) * nx);
    return fmi2OK;
}

fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real nominal[],
                                             size_t nx) {
    bg_inst *m = (bg_inst *)c;
    if (nx != (size_t)BG_NX)
        return error(m, "fmi2GetNominalsOfContinuousStates: %zu asked, the model has %d",
                     nx, BG_NX);
    memcpy(nominal, BG_NOMINAL, sizeof(double) * nx);
    return fmi2OK;
}

/* -- co-simulation ---------------------------------------------------------------- */
fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                       size_t nvr, const fmi2Integer order[],
                                       const fmi2Real value[]) {
    (void)vr; (void)order; (void)value;
    return nvr ? error((bg_inst *)c, "fmi2SetRealInputDerivatives: inputs are held "
                                     "constant over a step (canInterpolateInputs is false)")
               : fmi2OK;
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                        size_t nvr, const fmi2Integer order[],
                                        fmi2Real value[]) {
    (void)vr; (void)order; (void)value;
    return nvr ? error((bg_inst *)c, "fmi2GetRealOutputDerivatives: not provided "
                                     "(maxOutputDerivativeOrder is 0)")
               : fmi2OK;
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noSetPrior) {
    bg_inst *m = (bg_inst *)c;
    (void)noSetPrior;
    if (m->type != fmi2CoSimulation)
        return error(m, "fmi2DoStep: the instance was made for model exchange");
    if (m->mode == BG_FAILED)
        return error(m, "fmi2DoStep: an earlier step failed at t = %.17g s", m->t);
    if (!(h >= 0.0))
        return error(m, "fmi2DoStep: communication step size %g must not be negative", h);
    if (fabs(t - m->t) > 1e-9 * (1.0 + fabs(t)))
        return error(m, "fmi2DoStep: the step starts at t = %.17g s but the FMU is at "
                        "t = %.17g s", t, m->t);
    m->t = t;
    if (bg_solver_advance(m, t + h)) {
        m->mode = BG_FAILED;
        invalidate(m);
        return failed(m, "the step failed");
    }
    m->t = t + h;
    invalidate(m);
    m->mode = BG_STEP_COMPLETE;
    return fmi2OK;
}

fmi2Status fmi2CancelStep(fmi2Component c) {
    return error((bg_inst *)c, "fmi2CancelStep: steps are not asynchronous");
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value) {
    (void)s;
    *value = ((bg_inst *)c)->mode == BG_FAILED ? fmi2Error : fmi2OK;
    return fmi2OK;
}

fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *value) {
    bg_inst *m = (bg_inst *)c;
    if (s != fmi2LastSuccessfulTime)
        return error(m, "fmi2GetRealStatus: only fmi2LastSuccessfulTime is available");
    *value = m->t;
    return fmi2OK;
}

fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *v) {
    (void)s; (void)v;
    return error((bg_inst *)c, "fmi2GetIntegerStatus: no integer status");
}

fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *v) {
    (void)s;
    *v = fmi2False;                     /* (fmi2Terminated: never asked to terminate) */
    (void)c;
    return fmi2OK;
}

fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *v) {
    (void)s; (void)v;
    return error((bg_inst *)c, "fmi2GetStringStatus: no string status");
}
