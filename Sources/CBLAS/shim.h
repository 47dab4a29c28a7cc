// OpenBLAS's CBLAS interface and LAPACKE (both from Debian's libopenblas-dev / liblapacke-dev).
#include <cblas.h>
#include <lapacke.h>
