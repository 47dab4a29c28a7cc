// The sgemm rates of a transformer layer's shapes (SASRec, BERT4Rec on ml-100k: ~150,000
// packed positions a batch, width 64, inner 256) beside a square 2048³, against the system
// OpenBLAS: how fast these products can be before recbench adds anything. Best of 5 each.
//   clang -O2 scripts/gemm-shapes.c -o /tmp/gemm-shapes -lopenblas && /tmp/gemm-shapes
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cblas.h>
double now() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
void run(const char *label, int ta, int tb, int m, int n, int k) {
    float *a = calloc((size_t)m * k, 4), *b = calloc((size_t)k * n, 4), *c = calloc((size_t)m * n, 4);
    for (long i = 0; i < (long)m * k; i++) a[i] = (i % 7) * 0.1f;
    for (long i = 0; i < (long)k * n; i++) b[i] = (i % 5) * 0.1f;
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1, a, ta ? m : k, b, tb ? k : n, 0, c, n);
        double t = now() - t0; if (t < best) best = t;
    }
    printf("%-28s %6.1f GFLOP/s\n", label, 2.0 * m * n * k / best / 1e9);
    free(a); free(b); free(c);
}
int main() {
    int M = 150000;
    run("x·W 64->64", 0, 0, M, 64, 64);
    run("x·W 64->192", 0, 0, M, 192, 64);
    run("x·W 64->256", 0, 0, M, 256, 64);
    run("x·W 256->64", 0, 0, M, 64, 256);
    run("g·Wt 64<-64", 0, 1, M, 64, 64);
    run("g·Wt 64<-256", 0, 1, M, 64, 256);
    run("g·Wt 256<-64", 0, 1, M, 256, 64);
    run("xt·g 64x64", 1, 0, 64, 64, M);
    run("xt·g 64x256", 1, 0, 64, 256, M);
    run("xt·g 256x64", 1, 0, 256, 64, M);
    run("xt·g 64x192", 1, 0, 64, 192, M);
    run("2048^3 square", 0, 0, 2048, 2048, 2048);
}
