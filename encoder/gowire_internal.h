/* gowire_internal: what the two wire writers (gowire.c: "go 1.19 trace", gowire_v2.c:
 * "go 1.22 trace") share behind the one interface of gowire.h: the ops table every
 * gt_wire_* call goes through, growable byte buffers, string and stack ids, the file output. */
#ifndef GOTRACE_GOWIRE_INTERNAL_H
#define GOTRACE_GOWIRE_INTERNAL_H

#include "gowire.h"
#include "common/intern.h"
#include "common/varint.h"

struct gt_wire_ops {
	void (*sched)(struct gt_wire *w, const struct gt_sched_event *e);
	/* the 1.19 writer's own events (gt_wire_event); NULL in the 1.22 writer */
	void (*event)(struct gt_wire *w, uint64_t p, enum gt_go_event ev, uint64_t ticks,
		      const uint64_t *args);
	void (*user_log)(struct gt_wire *w, uint64_t p, const struct gt_wire_actor *who,
			 uint64_t ticks, uint64_t task, uint64_t key, uint64_t stack, const char *msg,
			 size_t len);
	uint64_t (*string)(struct gt_wire *w, const char *s, size_t len);
	void (*define_stack)(struct gt_wire *w, uint64_t id, const struct gt_wire_frame *frames,
			     size_t n);
	uint64_t (*stack)(struct gt_wire *w, const struct gt_wire_frame *frames, size_t n);
	void (*set_stack_id_base)(struct gt_wire *w, uint64_t id_base);
	void (*cpu_sample)(struct gt_wire *w, uint64_t ticks, uint64_t p,
			   const struct gt_wire_actor *who, uint64_t stack);
	bool (*running_label)(struct gt_wire *w, uint64_t ticks, const struct gt_wire_actor *who,
			      uint64_t label);
	int (*finish)(struct gt_wire *w, uint64_t ticks_per_second);
	void (*stats)(const struct gt_wire *w, struct gt_wire_stats *out);
	void (*free)(struct gt_wire *w);
};

/* The first member of each writer's own state. */
struct gt_wire {
	const struct gt_wire_ops *ops;
};

struct bytebuf {
	uint8_t *data;
	size_t len, cap;
};

/* Room for room more bytes (realloc); false on ENOMEM. */
bool gtw_bytebuf_reserve(struct bytebuf *b, size_t room);

/* Both writers' string and stack ids: a string (its last GT_WIRE_MAX_NAME bytes; *s and
 * *len say which, *s then the interned copy, stable until the table is freed) and a stack
 * by its PCs (the first GT_WIRE_MAX_FRAMES), ids from *next_id on; *fresh when new (the
 * caller defines it).  0 for "" / no frames, and when memory runs out (then *fresh is false
 * and the caller's error is ENOMEM). */
uint64_t gtw_intern_string(struct gt_intern *t, uint64_t *next_id, const char **s,
			   size_t *len, bool *fresh);
uint64_t gtw_intern_stack(struct gt_intern *t, uint64_t *next_id,
			  const struct gt_wire_frame *frames, size_t n, bool *fresh);

/* The 1.19 event a wait of kind (struct gt_wire_wait) is drawn as: GoBlockSync, GoBlockCond,
 * GoSleep, GoBlockNet or GoBlock. */
enum gt_go_event gtw_block_event(uint8_t kind);

/* Writes len bytes to fd (EINTR retried); 0 or the errno of the failure. */
int gtw_write_all(int fd, const uint8_t *p, size_t len);

#endif
