/*
 * termesc.h - text from a model or a goal made safe to print on a terminal.
 *
 * A model's summary, question or tool output, a goal's title: any of them
 * may hold escape sequences (ESC ] 0;title BEL sets the window title,
 * ESC [ 2J clears the screen, CR and backspace overwrite what was printed)
 * that a terminal would obey.  Every text printer in cli/ and
 * lifecycle/report.c passes such text through term_view(): control
 * characters become visible escapes - ESC as \e, CR \r, BEL \a, BS \b,
 * LF \n (unless TERM_KEEP_NL), other C0 and DEL as \xNN, C1 (U+0080..
 * U+009F) as \u00NN, a byte that is not UTF-8 as \xNN; tab and printable
 * text (UTF-8 included) are kept.  JSON output needs none of this (cJSON
 * escapes C0; DEL and C1 stay inside a JSON string).
 */
#ifndef GOALD_UTIL_TERMESC_H
#define GOALD_UTIL_TERMESC_H

#include <stdio.h>

#include "util/strbuf.h"

#define TERM_KEEP_NL 1 /* flags: keep newlines (multi-line layout) */

/* Append s, escaped, to out.  0 or ERR_TOOBIG (out's cap). */
int term_escape(strbuf *out, const char *s, int flags);

/* An escaped copy of s (NULL: "") for printf's %s.  The string belongs to
 * a ring of TERM_VIEWS buffers of this thread: valid until TERM_VIEWS
 * more calls; never freed by the caller. */
#define TERM_VIEWS 16
const char *term_view(const char *s);
const char *term_view_flags(const char *s, int flags);

/* Display columns of s (one per UTF-8 character; s already escaped). */
int term_columns(const char *s);

/* term_view(s) with tabs as spaces, cut to at most width columns: a longer
 * text ends in an ellipsis ("…").  Same ring as term_view(). */
const char *term_fit(const char *s, int width);

/* Print term_view(s) to f wrapped on spaces at width columns, each line
 * indented by indent spaces (the first one too) and ended by a newline; a
 * word longer than a line is cut where the line ends.  Nothing is lost:
 * for text shown whole, as an agent's question. */
void term_wrap(FILE *f, const char *s, int indent, int width);

/* The terminal's width on fd (TIOCGWINSZ), else $COLUMNS (20..1000),
 * else 80. */
int term_width(int fd);

#endif
