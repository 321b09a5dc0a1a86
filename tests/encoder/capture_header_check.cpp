// include/gotrace/capture.h from C++ (the same check as capture_header_check.c).
#include "capture_header_check.c"
