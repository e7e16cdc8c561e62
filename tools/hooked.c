/* run_gates, complete, ask_human: registered here, executed by the caller's
 * hook (the ReAct loop), see tool.h. */
#include "tools/internal.h"

const struct tool_def tool_def_run_gates = {
    .name = "run_gates",
    .description = "Run the goal's verification gates (tests, build, lint) now on a copy of the "
                   "worktree: each gate's result, test counts, a failure's output. complete "
                   "checks more.",
    .parameters = "{\"type\":\"object\",\"properties\":{}}",
    .run = 0,
};

const struct tool_def tool_def_complete = {
    .name = "complete",
    .description = "Declare the work item done. goald then runs the gates, the original tests "
                   "on your product without your test edits, and your new tests on the old code "
                   "(they must fail there); then a review.",
    .parameters = "{\"type\":\"object\",\"properties\":{\"summary\":{\"type\":\"string\","
                  "\"description\":\"what changed and the evidence it meets the success "
                  "criteria\"}},\"required\":[\"summary\"]}",
    .run = 0,
};

const struct tool_def tool_def_ask_human = {
    .name = "ask_human",
    .description = "Ask a human one question when the work cannot go on without the answer; the "
                   "item waits for it.",
    .parameters = "{\"type\":\"object\",\"properties\":{\"question\":{\"type\":\"string\"}},"
                  "\"required\":[\"question\"]}",
    .run = 0,
};
