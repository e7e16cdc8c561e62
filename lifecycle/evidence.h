/*
 * evidence.h - what backs each success criterion an item serves (part of
 * stage 6, the evaluation; docs/verification.md, "Evidence kinds").
 */
#ifndef GOALD_LIFECYCLE_EVIDENCE_H
#define GOALD_LIFECYCLE_EVIDENCE_H

#include "util/err.h"

struct job_ctx;
struct verify_state;

/* One "evidence" decision per success criterion the item serves (the
 * plan's assignment; every criterion when it has none), each with its
 * kind: test, gate, review, claimed or unchecked, and what backs it.
 * summary (may be NULL) is the model's; verified is item_verified()'s.
 * 0, or the store's error. */
int evidence_record(struct job_ctx *j, const struct verify_state *vs, const char *summary,
                    int verified) GOALD_MUST_CHECK;

#endif
