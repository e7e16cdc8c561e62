/*
 * compact.h - keeping a run's conversation inside the model's context
 * window (docs/llm.md, "Context windows and compaction").
 *
 * Before each execute call the request's tokens are estimated (the bytes
 * the request's strings take once JSON-escaped, divided by 4, plus a small
 * overhead per message).  Past llm.compact_at_pct of the model's window the
 * history is compacted:
 *   1. the head (system prompt, task, an earlier summary) and the last
 *      turns (at most llm.compact_keep_turns, fewer when they do not fit
 *      half the threshold, at least one) stay verbatim;
 *   2. older tool outputs become one-line stubs
 *      ("[elided: read src/a.c -> 20480 bytes]") and older tool-call
 *      arguments lose their long strings;
 *   3. if that is still past the threshold, the older turns are condensed
 *      by a model call (stage condense, answer {"summary": "..."}) into
 *      one user message right after the task, replacing them; when that
 *      call fails they are dropped with a note instead.
 * Whole turns (an assistant message with its tool results) are removed or
 * kept together, so every tool result still answers a call in the history
 * and every call keeps its result, in both wire formats.  Each compaction
 * is an event context.compacted {turn, reason, how, tokens_before,
 * tokens_after, window, threshold, stubbed, condensed_turns}.
 */
#ifndef GOALD_LIFECYCLE_COMPACT_H
#define GOALD_LIFECYCLE_COMPACT_H

#include <stddef.h>
#include <stdint.h>

struct job_ctx;
struct llm_message;
struct llm_tool_def;

/* The estimated prompt tokens of a request with these messages and tools. */
int64_t compact_estimate(const struct llm_message *m, size_t n, const struct llm_tool_def *tools,
                         size_t ntools);

/* Compact the history (*m, *n; messages are freed or changed in place)
 * when the request is past the threshold of the window of j's current
 * model, or always when force (the provider answered context_length).
 * *changed = 1 when the history changed.  0, or an error only when the
 * event could not be written (never for a failed condense call). */
int compact_history(struct job_ctx *j, struct llm_message *m, size_t *n,
                    const struct llm_tool_def *tools, size_t ntools, int turn, int force,
                    int *changed);

#endif
