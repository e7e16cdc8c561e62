/* run_gates, complete, ask_human: registered here, executed by the caller's
 * hook (the ReAct loop), see tool.h. */
#include "tools/internal.h"

const struct tool_def tool_def_run_gates = {
    .name = "run_gates",
    .description = "Run the goal's verification gates (tests, build, lint, typecheck) now, in "
                   "the sandbox, and return their results.",
    .parameters = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
    .run = 0,
};

const struct tool_def tool_def_complete = {
    .name = "complete",
    .description = "Declare the work item done and ready for verification, with a summary of "
                   "what was changed and how it meets the success criteria.",
    .parameters = "{\"type\":\"object\",\"properties\":{\"summary\":{\"type\":\"string\","
                  "\"description\":\"What was done and the evidence for it\"}},"
                  "\"required\":[\"summary\"],\"additionalProperties\":false}",
    .run = 0,
};

const struct tool_def tool_def_ask_human = {
    .name = "ask_human",
    .description = "Ask a human one question when the work cannot go on without an answer; "
                   "the work item waits until it is answered.",
    .parameters = "{\"type\":\"object\",\"properties\":{\"question\":{\"type\":\"string\","
                  "\"description\":\"One clear question\"}},"
                  "\"required\":[\"question\"],\"additionalProperties\":false}",
    .run = 0,
};
