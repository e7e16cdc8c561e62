/*
 * secret.h - credentials taken out of the process environment.
 *
 * /proc/PID/environ shows the environment block a process was started
 * with, to every process of the same user (and `ps eww` prints it).  Under
 * GOALD_SANDBOX=none the model's commands run as goald's user, so an API
 * key left there is one `cat /proc/$PPID/environ` away.  At start-up main()
 * takes each credential variable (the LLM keys, the forge and push tokens)
 * into private memory: the value is copied, its bytes in the original
 * block are overwritten with NULs, and the variable is unset, so neither
 * /proc/PID/environ nor any child (which inherits `environ`) sees it.
 * Code reads credentials with secret_get(), never getenv().
 *
 * A daemon hands its credentials to the jobs it starts through a pipe
 * (secret_child_env): the job reads them at start-up (secret_receive) and
 * never has them in its environment.
 *
 * Single-threaded use: call these from main() and the daemon's loop.
 */
#ifndef GOALD_UTIL_SECRET_H
#define GOALD_UTIL_SECRET_H

/* The variable that names the descriptor a parent goald passes its
 * credentials on. */
#define SECRET_FD_VAR "GOALD_SECRET_FD"

/* Take variable name out of the environment into the store (see above).
 * Unset or empty: nothing happens.  0 or ERR_INVALID (a bad name). */
int secret_take(const char *name);

/* Take the fixed credential variables (GOALD_LLM_API_KEY, OPENAI_API_KEY,
 * ANTHROPIC_API_KEY, GOALD_FORGE_TOKEN) and those the loaded configuration
 * names (llm.models[].api_key_env, forge.token_env, vcs.push_token_env). */
void secret_take_all(void);

/* The credential name: the stored value, else getenv(name) (a variable set
 * after start-up, as unit tests do).  NULL when neither is set.  The
 * pointer stays valid until secret_clear(). */
const char *secret_get(const char *name);

/* Whether name is a credential variable that secret_take() took. */
int secret_is_taken(const char *name);

/* In a process started by goald: when SECRET_FD_VAR names a pipe, read the
 * credentials from it (NAME=value entries, NUL-separated), close it and
 * unset the variable.  0 when there was nothing to read or all went well;
 * ERR_IO or ERR_INVALID otherwise (nothing stored). */
int secret_receive(void);

/* For a child goald: a malloc'd NULL-terminated environment (the current
 * one plus SECRET_FD_VAR=N) into *envp, and into *fd the read end of a
 * pipe (O_CLOEXEC: the child clears that flag after fork) that holds every
 * stored credential.  With nothing stored: *envp = NULL (use environ) and
 * *fd = -1.  Free with secret_child_env_free(*envp) and close(*fd) in the
 * parent after fork.  0 or ERR_IO / ERR_TOOBIG. */
int secret_child_env(char ***envp, int *fd);
void secret_child_env_free(char **envp);

/* Wipe and free every stored credential. */
void secret_clear(void);

#endif
