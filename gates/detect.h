/*
 * detect.h - a verification plan guessed from a repository's build files,
 * for goals that give none and a model that proposes none.
 *
 * Looked for, in order: a Makefile with a `test` or `check` target,
 * CMakeLists.txt (configure, build, ctest), package.json scripts (test,
 * build, lint), pyproject.toml / pytest.ini / setup.cfg with pytest, go.mod,
 * Cargo.toml.  Each found gives one or more gates
 * {"name","type","command","must_pass":true}.
 */
#ifndef GOALD_GATES_DETECT_H
#define GOALD_GATES_DETECT_H

struct cJSON;

/* A JSON array of gates for the repository at root (empty when nothing is
 * recognised); the caller frees it with cJSON_Delete().  NULL only on
 * out-of-memory. */
struct cJSON *gates_detect(const char *root);

#endif
