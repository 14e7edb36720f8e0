/* Small dense linear algebra for the exported FMU's engines (see bg_linalg.h). */
#include <math.h>
#include <string.h>

#include "bg_linalg.h"

void bg_mm(double *C, const double *A, const double *B, int m, int k, int n, int add) {
    for (int i = 0; i < m; i++) {
        double *c = C + (long)i * n;
        if (!add)
            for (int j = 0; j < n; j++) c[j] = 0.0;
        for (int l = 0; l < k; l++) {
            double a = A[(long)i * k + l];
            if (a == 0.0) continue;
            const double *b = B + (long)l * n;
            for (int j = 0; j < n; j++) c[j] += a * b[j];
        }
    }
}

void bg_mv(double *y, const double *A, const double *x, int m, int n, int add) {
    for (int i = 0; i < m; i++) {
        double s = 0.0;
        const double *a = A + (long)i * n;
        for (int j = 0; j < n; j++) s += a[j] * x[j];
        y[i] = add ? y[i] + s : s;
    }
}

int bg_lu(double *A, int n, int *piv, double *dmin, double *dmax) {
    double lo = INFINITY, hi = 0.0;
    for (int j = 0; j < n; j++) {
        int p = j;
        double best = fabs(A[(long)j * n + j]);
        for (int i = j + 1; i < n; i++) {
            double v = fabs(A[(long)i * n + j]);
            if (v > best) { best = v; p = i; }
        }
        piv[j] = p;
        if (!(best > 0.0) || !isfinite(best)) return 1;
        if (p != j)
            for (int l = 0; l < n; l++) {
                double t = A[(long)j * n + l];
                A[(long)j * n + l] = A[(long)p * n + l];
                A[(long)p * n + l] = t;
            }
        double d = A[(long)j * n + j];
        for (int i = j + 1; i < n; i++) {
            double f = A[(long)i * n + j] / d;
            A[(long)i * n + j] = f;
            if (f == 0.0) continue;
            for (int l = j + 1; l < n; l++) A[(long)i * n + l] -= f * A[(long)j * n + l];
        }
        if (best < lo) lo = best;
        if (best > hi) hi = best;
    }
    if (dmin) *dmin = n ? lo : 0.0;
    if (dmax) *dmax = hi;
    return 0;
}

void bg_lu_solve(const double *LU, int n, const int *piv, double *B, int nrhs) {
    for (int j = 0; j < n; j++)
        if (piv[j] != j)
            for (int c = 0; c < nrhs; c++) {
                double t = B[(long)j * nrhs + c];
                B[(long)j * nrhs + c] = B[(long)piv[j] * nrhs + c];
                B[(long)piv[j] * nrhs + c] = t;
            }
    for (int i = 0; i < n; i++)                 /* L y = P b (unit diagonal) */
        for (int l = 0; l < i; l++) {
            double f = LU[(long)i * n + l];
            if (f == 0.0) continue;
            for (int c = 0; c < nrhs; c++) B[(long)i * nrhs + c] -= f * B[(long)l * nrhs + c];
        }
    for (int i = n - 1; i >= 0; i--) {          /* U x = y */
        for (int l = i + 1; l < n; l++) {
            double f = LU[(long)i * n + l];
            if (f == 0.0) continue;
            for (int c = 0; c < nrhs; c++) B[(long)i * nrhs + c] -= f * B[(long)l * nrhs + c];
        }
        double d = LU[(long)i * n + i];
        for (int c = 0; c < nrhs; c++) B[(long)i * nrhs + c] /= d;
    }
}
