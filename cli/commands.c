/* The command table: one line per command, defined in its own cmd_*.c. */
#include "cli/cli.h"

extern const struct cli_command cmd_submit, cmd_goals, cmd_goal_show, cmd_report, cmd_cancel,
    cmd_events, cmd_migrate, cmd_cron_next, cmd_doctor, cmd_llm_chat, cmd_tool, cmd_job, cmd_claim, cmd_daemon, cmd_status, cmd_escalations,
    cmd_resolve, cmd_demo, cmd_config_show, cmd_config_reference, cmd_watch, cmd_cli_reference,
    cmd_serve, cmd_token_create, cmd_token_list, cmd_token_revoke;

const struct cli_command *const cli_commands[] = {
    &cmd_submit,
    &cmd_goals,
    &cmd_goal_show,
    &cmd_report,
    &cmd_cancel,
    &cmd_daemon,
    &cmd_status,
    &cmd_escalations,
    &cmd_resolve,
    &cmd_events,
    &cmd_watch,
    &cmd_serve,
    &cmd_token_create,
    &cmd_token_list,
    &cmd_token_revoke,
    &cmd_cron_next,
    &cmd_migrate,
    &cmd_config_show,
    &cmd_config_reference,
    &cmd_doctor,
    &cmd_demo,
    &cmd_llm_chat,
    &cmd_tool,
    &cmd_job,
    &cmd_claim,
    &cmd_cli_reference,
    NULL,
};
