/* go_oracle: run Go's own trace readers on a trace file and parse their dumps, for the
 * encoder tests.  Go 1.19 `trace -d` (one line per event) and Go 1.23 `trace -d=1`
 * (converted events with stacks). */
#ifndef GOTRACE_TEST_GO_ORACLE_H
#define GOTRACE_TEST_GO_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GO119_TRACE "/usr/lib/go-1.19/pkg/tool/linux_amd64/trace"
#define GO123_TRACE "/usr/lib/go-1.23/pkg/tool/linux_amd64/trace"

/* One Go 1.19 event: "<ns> <Type> p=<P> g=<G> off=<off> <args>". */
struct go119_event {
	int64_t ns;
	char type[32];
	int64_t p, g;          /* g: the goroutine context (G 0 = none) */
	char args[160];        /* "g=2 seq=1 ..." */
};

struct go119_trace {
	bool ok;               /* exit status 0 */
	char error[512];       /* stderr's last line when not ok */
	struct go119_event *ev;
	size_t n;
};

/* One Go 1.23 converted event: the header line and the function names of its stacks. */
struct go123_event {
	char line[256];        /* "M=.. P=.. G=.. StateTransition Time=.. ..." */
	int64_t m, p, g, time;
	char kind[24];         /* StateTransition, Label, ... */
	char resource[32];     /* "Goroutine(2)", "Proc(1)" */
	char reason[48];
	char transition[48];   /* "Running->Waiting" */
	char stack[512];       /* function names of Stack=, innermost first, ';'-separated */
	char tstack[512];      /* same for TransitionStack= */
};

struct go123_trace {
	bool ok;
	char error[512];
	struct go123_event *ev;
	size_t n;
};

bool go119_parse(const char *trace_path, struct go119_trace *out);
bool go123_parse(const char *trace_path, struct go123_trace *out);
void go119_free(struct go119_trace *t);
void go123_free(struct go123_trace *t);

/* The value of key=... in an event's args, or def. */
int64_t go119_arg(const struct go119_event *e, const char *key, int64_t def);
/* Events of a type, counted; index of the k-th (0-based) or -1. */
size_t go119_count(const struct go119_trace *t, const char *type);
long go119_find(const struct go119_trace *t, const char *type, size_t k);
/* The k-th event of type whose arg key == value; -1 when absent. */
long go119_find_arg(const struct go119_trace *t, const char *type, const char *key, int64_t value,
		    size_t k);

#endif
