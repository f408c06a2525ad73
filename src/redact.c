/*-------------------------------------------------------------------------
 *
 * redact.c
 *	  Keeping warehouse values out of errors and log lines: COPY's context
 *	  lines, the row a constraint error shows, the value a type error
 *	  quotes (see redact.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "lib/stringinfo.h"

#include "redact.h"

/*
 * Warehouse values in errors and log lines.  COPY adds to the context of
 * every message raised while it runs the line it is at, values included
 * ("COPY t, line 2979: "2979	secret..."), and the triggers, defaults and
 * input functions it runs add lines of their own.  A COPY of a cycle (or of
 * verify) therefore runs with an error context stack of its own, empty at
 * the start: whatever context a message raised inside it carries came from
 * COPY or from what COPY ran, and is dropped, while the lines of the cycle
 * around it (its table and run, its chunk) are added again.  An error is
 * caught around the COPY and raised again without that context (stage.c);
 * a message emitted while the COPY runs (a trigger's WARNING, a lock wait
 * logged by log_lock_waits, a FATAL) goes through the log hook below, which
 * every process installs on its first COPY.
 */
static RedactCopyGuard *current_copy = NULL;
static emit_log_hook_type prev_emit_log_hook = NULL;
static bool copy_hook_installed = false;

/*
 * emit_log_hook: a message emitted while a COPY runs loses the context the
 * COPY gave it and gets the one around the outermost COPY.  The callbacks
 * append to this message, the one being emitted, as errfinish's would.
 */
static void
copy_emit_log_hook(ErrorData *edata)
{
	if (current_copy != NULL)
	{
		RedactCopyGuard *outermost = current_copy;

		while (outermost->previous != NULL)
			outermost = outermost->previous;
		edata->context = NULL;
		for (ErrorContextCallback *cb = outermost->outer; cb != NULL; cb = cb->previous)
			cb->callback(cb->arg);
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/*
 * Before a COPY: run it on an empty error context stack (see above), until
 * RedactCopyEnd(), which the caller also calls when the COPY fails.
 */
void
RedactCopyBegin(RedactCopyGuard *guard)
{
	if (!copy_hook_installed)
	{
		prev_emit_log_hook = emit_log_hook;
		emit_log_hook = copy_emit_log_hook;
		copy_hook_installed = true;
	}
	Assert(guard != current_copy);
	guard->outer = error_context_stack;
	guard->previous = current_copy;
	current_copy = guard;
	error_context_stack = NULL;
}

/*
 * After a COPY, or in the PG_CATCH around one: the error context stack as it
 * was.  Does nothing for a guard that is not the running COPY's (the error
 * came before RedactCopyBegin() or after RedactCopyEnd()).
 */
void
RedactCopyEnd(RedactCopyGuard *guard)
{
	if (current_copy != guard)
		return;
	error_context_stack = guard->outer;
	current_copy = guard->previous;
}

/*
 * Take warehouse values out of an error that is stored (the run log, a
 * chunk's error, a reader's error handed to its cycle) or logged.  The
 * DETAIL of PostgreSQL's constraint errors shows the row: "Failing row
 * contains (...)", "Key (...)=(...) already exists.".  They are the class
 * 23 errors that name their table, column, constraint or type in the
 * error's fields (errtablecol(), errtableconstraint(), errdomainconstraint()),
 * which the extension's own errors of that class never do; their message
 * names only the constraint and the table, and is kept.
 */
void
RedactError(ErrorData *edata)
{
	if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION &&
		(edata->table_name != NULL || edata->column_name != NULL ||
		 edata->constraint_name != NULL || edata->datatype_name != NULL))
	{
		edata->detail = NULL;
		edata->detail_log = NULL;
	}
}

/*
 * Quote marks of messages, in PostgreSQL's and drivers' languages: ASCII,
 * then in UTF-8 the guillemets, the curved quotes and the corner brackets.
 */
static const char *const quote_marks[] = {
	"\"", "'",
	"\xc2\xab", "\xc2\xbb",	/* << >> */
	"\xe2\x80\x9c", "\xe2\x80\x9d", "\xe2\x80\x9e",	/* curved double, low double */
	"\xe2\x80\x98", "\xe2\x80\x99",	/* curved single */
	"\xe3\x80\x8c", "\xe3\x80\x8d", "\xe3\x80\x8e", "\xe3\x80\x8f"	/* corner brackets */
};

/* The length of the quote mark at p, or 0. */
static int
quote_mark_at(const char *p)
{
	for (size_t i = 0; i < lengthof(quote_marks); i++)
	{
		int			len = strlen(quote_marks[i]);

		if (strncmp(p, quote_marks[i], len) == 0)
			return len;
	}
	return 0;
}

/*
 * A message about a value (PostgreSQL's "invalid input syntax for type
 * integer: "..."", a warehouse's "Incorrect integer value: '...'"), with
 * the value taken out: everything from its first quote mark to its last
 * becomes "...", or to the end if it has one only, so that neither a quote
 * mark inside the value nor a value cut short lets a piece of it through;
 * bytes shown as 0xNN (an invalid byte sequence) become 0x...  Names that
 * were quoted go with it.
 */
char *
RedactQuoted(const char *message)
{
	const char *first = NULL;
	const char *after_last = NULL;
	StringInfoData out;
	const char *p;

	for (p = message; *p != '\0';)
	{
		int			len = quote_mark_at(p);

		if (len == 0)
		{
			p++;
			continue;
		}
		if (first == NULL)
			first = p;
		else
			after_last = p + len;
		p += len;
	}

	initStringInfo(&out);
	if (first == NULL)
		appendStringInfoString(&out, message);
	else
	{
		appendBinaryStringInfo(&out, message, first - message);
		appendStringInfoString(&out, "\"...\"");
		if (after_last != NULL)
			appendStringInfoString(&out, after_last);
	}

	/* 0xNN... of a byte sequence: 0x.. */
	for (int i = 0; i + 2 < out.len; i++)
	{
		int			j = i + 2;

		if (out.data[i] != '0' || out.data[i + 1] != 'x' ||
			(i > 0 && isalnum((unsigned char) out.data[i - 1])))
			continue;
		while (j < out.len && isxdigit((unsigned char) out.data[j]))
			out.data[j++] = '.';
		i = j;
	}
	return out.data;
}
