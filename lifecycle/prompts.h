/*
 * prompts.h - the system prompts and answer schemas of the LLM stages
 * (docs/design.md §6 "LLM").  Static text; nothing to free.
 */
#ifndef GOALD_LIFECYCLE_PROMPTS_H
#define GOALD_LIFECYCLE_PROMPTS_H

extern const char prompt_elaborate[];
extern const char schema_elaborate[];
extern const char prompt_plan[];
extern const char schema_plan[];
extern const char prompt_execute[];
extern const char prompt_review[];
extern const char schema_review[];
extern const char prompt_evaluate[];
extern const char schema_evaluate[];
extern const char prompt_plan_b[];
extern const char schema_plan_b[];
extern const char prompt_escalate[];
extern const char schema_escalate[];
extern const char prompt_condense[];
extern const char schema_condense[];

#endif
