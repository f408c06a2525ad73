# treble_sync: PGXS build. `make && make install`, then `make installcheck`
# against a running destination (see .ci/run, which also starts a warehouse).

EXTENSION  = treble_sync
MODULE_big = treble_sync
EXTVERSION = 0.1.0

OBJS = \
	src/treble_sync.o \
	src/option.o \
	src/odbc.o \
	src/fetch.o \
	src/progress.o \
	src/catalog.o \
	src/schema.o \
	src/stage.o \
	src/cycle.o \
	src/drift.o \
	src/checks.o \
	src/verify.o \
	src/load.o \
	src/worker.o \
	src/register.o \
	src/sync.o \
	src/security.o \
	src/attempt.o \
	src/deparse.o \
	src/localsql.o

DATA = sql/$(EXTENSION)--$(EXTVERSION).sql

TESTS        = $(wildcard sql/[0-9]*.sql)
REGRESS      = $(patsubst sql/%.sql,%,$(TESTS))
REGRESS_OPTS = --inputdir=. --load-extension=dblink

SHLIB_LINK += -lodbc -lodbcinst -lpthread
PG_CPPFLAGS += -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: every object depends on every
# header of src/ (a header change is rare, a full rebuild is quick).
$(OBJS): $(wildcard src/*.h)
