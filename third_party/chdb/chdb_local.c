/*
 * chdb_local — run ClickHouse's clickhouse-local from chDB's libchdb.so.
 *
 * libchdb.so (npm package @chdb/lib-linux-x64-gnu) embeds a whole ClickHouse
 * engine. Its entry point query_stable_v2() takes a clickhouse-local command
 * line and returns the query's output. The tests give it a command line that
 * starts ClickHouse's HTTP interface (SYSTEM START LISTEN HTTP) and then runs
 * a query that never ends, so the process keeps serving until it is killed
 * (.ci/clusters sends SIGTERM). Every argument is passed on as it is.
 *
 * The struct below is libchdb's result layout (chdb.h, struct
 * local_result_v2); only the fields read here matter, but the layout must
 * match up to error_message.
 *
 * Part of treble_sync's test set-up; same licence as treble_sync.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct local_result_v2
{
	char	   *buf;			/* the query's output */
	size_t		len;
	void	   *_vec;
	double		elapsed;
	uint64_t	rows_read;
	uint64_t	bytes_read;
	char	   *error_message;	/* NULL on success */
};

extern struct local_result_v2 *query_stable_v2(int argc, char **argv);

int
main(int argc, char **argv)
{
	struct local_result_v2 *res;

	/* clickhouse-local recognises itself by its program name */
	argv[0] = "clickhouse";
	res = query_stable_v2(argc, argv);
	if (res == NULL)
	{
		fprintf(stderr, "chdb_local: libchdb returned no result\n");
		return 1;
	}
	if (res->error_message != NULL)
	{
		fprintf(stderr, "chdb_local: %s\n", res->error_message);
		return 1;
	}
	if (res->len > 0)
		fwrite(res->buf, 1, res->len, stdout);
	return 0;
}
