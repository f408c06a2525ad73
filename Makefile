# treble_sync: PGXS build. `make && make install`, then `make installcheck`
# against any running cluster with the extension installed: its warehouse is
# an SQLite file the tests create (it needs the sqlite3 client and the SQLite
# ODBC driver "SQLite3", nothing else). `make installcheck-clusters` runs the
# multi-cluster suite against the clusters .ci/clusters starts (see .ci/run
# and CONTRIBUTING.md).

EXTENSION  = treble_sync
MODULE_big = treble_sync
EXTVERSION = 0.2.0

OBJS = \
	src/treble_sync.o \
	src/lockwait.o \
	src/option.o \
	src/regoption.o \
	src/odbc.o \
	src/fetch.o \
	src/progress.o \
	src/catalog.o \
	src/schema.o \
	src/stage.o \
	src/readahead.o \
	src/reader.o \
	src/wire.o \
	src/cycle.o \
	src/drift.o \
	src/checks.o \
	src/verify.o \
	src/load.o \
	src/redact.o \
	src/cursor.o \
	src/process.o \
	src/launch.o \
	src/worker.o \
	src/register.o \
	src/sync.o \
	src/security.o \
	src/attempt.o \
	src/history.o \
	src/deparse.o \
	src/localsql.o \
	src/recovery.o \
	src/advisor.o \
	src/group.o \
	src/version.o \
	src/testhook.o

# The install script of the first release and one upgrade script per release
# since (CONTRIBUTING.md, "Releases"): CREATE EXTENSION runs them in order.
DATA = $(wildcard sql/$(EXTENSION)--*.sql)

# The self-contained suite (sql/, expected/), in this order: setup creates
# the SQLite warehouse file and its server, cleanup removes them.
REGRESS      = setup register cycle window privileges options bad_rows nulls edge_values attack_bytes attack_extremes attack_odd_args attack_row_values attack_triggers attack_sqlite_files attack_groups explain cleanup
REGRESS_OPTS = --inputdir=.

# The multi-cluster suite (test/regress/): a second PostgreSQL cluster as the
# warehouse, changed through dblink, and the treble_test.* settings of the
# destination. Results and regression.diffs go to test/regress/.
CLUSTER_TESTS        = $(wildcard test/regress/sql/[0-9]*.sql)
CLUSTER_REGRESS      = $(patsubst test/regress/sql/%.sql,%,$(CLUSTER_TESTS))
CLUSTER_REGRESS_OPTS = --inputdir=test/regress --outputdir=test/regress --load-extension=dblink \
                       --dbname=$(CONTRIB_TESTDB)

# The isolation suite (specs/*.spec, expected output in expected/): cycles
# held mid-way by a lock on the PostgreSQL warehouse against registration
# changes and DDL in other sessions, run by pg_isolation_regress against
# the clusters .ci/clusters starts (it needs the treble_test.* settings
# and dblink). Results go to output_iso/.
ISOLATION_SPECS     = $(wildcard specs/*.spec)
ISOLATION_TESTS     = $(patsubst specs/%.spec,%,$(ISOLATION_SPECS))
ISOLATION_TEST_OPTS = --inputdir=. --outputdir=output_iso --load-extension=dblink \
                      --dbname=isolation_regression_$(EXTENSION)

SHLIB_LINK += -lodbc -lodbcinst -lpthread
# the release the library is, whose catalog it needs (src/version.c),
# also in its module magic on 18 (src/compat.h)
PG_CPPFLAGS += -DTREBLE_SYNC_VERSION='"$(EXTVERSION)"'
PG_CPPFLAGS += -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

.PHONY: installcheck-clusters
installcheck-clusters: submake
	$(pg_regress_installcheck) $(CLUSTER_REGRESS_OPTS) $(CLUSTER_REGRESS)

.PHONY: installcheck-isolation
installcheck-isolation: submake
	$(pg_isolation_regress_installcheck) $(ISOLATION_TEST_OPTS) $(ISOLATION_TESTS)

clean: clean-clusters
.PHONY: clean-clusters
clean-clusters:
	rm -rf test/regress/results test/regress/regression.diffs test/regress/regression.out output_iso


# make dist: the release archive for PGXN, treble_sync-0.1.0.zip, of the
# committed tree (git archive HEAD) less what .gitattributes marks
# export-ignore (the test clusters, the Debian packaging, the demo, the
# benchmarks, third_party/); it builds, installs and runs `make installcheck`
# on its own. DIST_DIR: where to write it (default: here).
DISTNAME = $(EXTENSION)-$(EXTVERSION)
DIST_DIR ?= .
.PHONY: dist
dist:
	git archive --format=zip --prefix=$(DISTNAME)/ -o $(DIST_DIR)/$(DISTNAME).zip HEAD

# PGXS tracks no header dependencies: every object depends on every
# header of src/ (a header change is rare, a full rebuild is quick).
$(OBJS): $(wildcard src/*.h)
