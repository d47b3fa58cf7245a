/* help.c — every kmeshctl command's --help (commands.h). */
#include "tools/kmeshctl/commands.h"

#include <stdio.h>
#include <string.h>

int km_cmd_wants_help(int argc, char **argv, const char *text)
{
	for (int i = 0; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(text, stdout);
			return 1;
		}
	return 0;
}
