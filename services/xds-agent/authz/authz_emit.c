/* authz_emit.c — the one way the authorization compiler's files write rows: an op appended to
 * the compiler's list, an allocation failure remembered. The lowest layer of the compiler:
 * sets, the index, lists and the compiler proper all call it, and it calls none of them. */
#include "services/xds-agent/authz/authz_internal.h"

struct km_op *az_emit(struct km_authz *a, enum km_op_table table, int del, int now)
{
	struct km_op *op = now ? km_oplist_add_now(a->out, table, del) : km_oplist_add(a->out, table, del);

	if (!op)
		a->oom = 1;
	return op;
}
