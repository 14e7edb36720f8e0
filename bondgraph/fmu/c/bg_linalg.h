/* Small dense linear algebra for the exported FMU's engines (row-major matrices). */
#ifndef BG_LINALG_H
#define BG_LINALG_H

/* C (m x n) = A (m x k) B (k x n), or C += A B when add is 1 */
void bg_mm(double *C, const double *A, const double *B, int m, int k, int n, int add);
/* y (m) = A (m x n) x, or y += A x when add is 1 */
void bg_mv(double *y, const double *A, const double *x, int m, int n, int add);
/* LU factors of A (n x n, in place) with partial pivoting (rows swapped as piv says);
   0, or 1 when a pivot is zero or not finite. *dmin, *dmax: the smallest and largest
   |pivot| (may be NULL). */
int bg_lu(double *A, int n, int *piv, double *dmin, double *dmax);
/* solve A X = B in place (B: n x nrhs) with bg_lu's factors */
void bg_lu_solve(const double *LU, int n, const int *piv, double *B, int nrhs);

#endif
