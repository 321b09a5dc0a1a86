/* GOTRACE_OUT: converting the capture at exit (exit_convert.c). */
#ifndef GT_EXIT_CONVERT_H
#define GT_EXIT_CONVERT_H

#include "base.h"

/* Runs `gotrace convert -q CAPTURE -o <GOTRACE_OUT>` and waits; failures are one warning. */
void gt_exit_convert(const char *capture) GT_HIDDEN;

#endif
