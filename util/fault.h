/*
 * fault.h - failure injection for the crash tests (the control plane's
 * "scripted fakes for failure injection").
 *
 * fault_point("publish.after_push") kills the process with SIGKILL, as a
 * crash would, when GOALD_FAULT names that point (a comma-separated list;
 * "name@N" fires at the N-th time the point is reached in the process).
 * Without GOALD_FAULT it costs one getenv per call and does nothing.
 * The points are listed in docs/testing.md.
 */
#ifndef GOALD_UTIL_FAULT_H
#define GOALD_UTIL_FAULT_H

void fault_point(const char *name);

#endif
