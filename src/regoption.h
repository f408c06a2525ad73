/*-------------------------------------------------------------------------
 *
 * regoption.h
 *	  The options of a registration as data (regoption.c): one descriptor
 *	  per argument of add_table() and alter_table(), which drives reading
 *	  the arguments by name, checking the values, the catalog's INSERT,
 *	  UPDATE and SELECT of treble_sync.tables, and the check of the
 *	  documentation (.ci/regoptions).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_REGOPTION_H
#define TREBLE_SYNC_REGOPTION_H

#include "postgres.h"

#include "fmgr.h"

#include "treble_sync.h"

/*
 * What an option's value is, in the call, in TableConfig and in the
 * catalog.  The type decides how an argument is read, how a NULL is taken,
 * and how the value is bound and read back.
 */
typedef enum RegOptionType
{
	REGOPT_BOOL,				/* boolean; bool */
	REGOPT_INT,					/* integer; int */
	REGOPT_SERVER_INT,			/* integer; int, -1 (NULL in the catalog): the server's */
	REGOPT_REAL,				/* real; double */
	REGOPT_TEXT,				/* text; char *, NULL: none */
	REGOPT_INTERVAL,			/* text with a unit; Interval *, NULL: none */
	REGOPT_CHOICE,				/* text, one of choices; an enum, the choice's index */
	REGOPT_NAMES,				/* text[] of column names; List of char * */
	REGOPT_MASK,				/* jsonb {column: "sha256"}; List of char *; jsonb */
	REGOPT_OTHER				/* read by register.c, not stored as such */
} RegOptionType;

/* flags of a RegOption */
#define REGOPT_ADD			0x01	/* an argument of add_table() */
#define REGOPT_ALTER		0x02	/* an argument of alter_table(), which may change it */
#define REGOPT_NULLABLE		0x04	/* NULL is a value: none, or the server's */
#define REGOPT_REQUIRED		0x08	/* a NULL in add_table() is an error */
#define REGOPT_OWN_READ		0x10	/* register.c reads the argument itself */
#define REGOPT_OWN_WRITE	0x20	/* written by a function of its own, not the
									 * registration's INSERT or UPDATE */
#define REGOPT_RESETS		0x40	/* changing it drops the watermark */
#define REGOPT_CYCLE_LOCK	0x80	/* changing it needs the table's cycle lock */

/* One option of a registration. */
typedef struct RegOption
{
	const char *name;			/* add_table()'s argument, and the messages' name */
	const char *alter_name;		/* alter_table()'s argument, if not name */
	RegOptionType type;
	Oid			argtype;		/* the SQL type of its argument */
	const char *default_value;	/* add_table()'s DEFAULT, as SQL writes it; NULL: none */
	int			flags;
	const char *column;			/* its column of treble_sync.tables, or NULL */
	int			field;			/* offsetof() its field in TableConfig, or -1 */
	const char *const *choices; /* REGOPT_CHOICE: in enum order, NULL-terminated */
	double		min;			/* numbers: the lower bound; intervals: 1 for
								 * at least a second unless zero */
	double		max;			/* numbers: the upper bound */
	const char *unit;			/* numbers: written after max in the message */
	const char *hint;			/* of the error for a value out of bounds, not
								 * one of the choices, or NULL where required */
	void		(*check) (const TableConfig *cfg);	/* with other options */
} RegOption;

/*
 * The options of one call of add_table() or alter_table(), found by the
 * names of the function's arguments.
 */
typedef struct RegArgs
{
	FunctionCallInfo fcinfo;
	bool		altering;		/* alter_table(): NULL leaves an option as it is */
	const int16 *argno;			/* per option: its argument's number, or -1 */
} RegArgs;

extern int	RegOptionCount(void);
extern const RegOption *RegOptionAt(int i);
extern const RegOption *RegOptionByName(const char *name);

extern void RegArgsInit(RegArgs *args, FunctionCallInfo fcinfo, bool altering);
extern bool RegArgGiven(const RegArgs *args, const char *name);
extern Datum RegArgDatum(const RegArgs *args, const char *name);
extern char *RegArgText(const RegArgs *args, const char *name);
extern bool RegArgsAnyGiven(const RegArgs *args, int flags);
extern void RegOptionsRead(const RegArgs *args, TableConfig *cfg);
extern void RegOptionsCheck(const TableConfig *cfg);
extern bool RegOptionsReset(const TableConfig *before, const TableConfig *after);

extern Interval *RegOptionInterval(const char *text, const char *name);
extern void RegOptionCheckInterval(Interval *value, const char *name, bool min_second);
extern bool RegIntervalNotPositive(Interval *value, bool or_zero);
extern const char *RegOptionChoiceName(const char *option, int value);
extern int	RegOptionParseChoice(const char *option, const char *name);

/* The field of a TableConfig an option is kept in, as a "type" lvalue. */
#define RegOptionField(cfg, opt, type) \
	(*(type *) ((char *) (cfg) + (opt)->field))

#endif							/* TREBLE_SYNC_REGOPTION_H */
