/* test_bundle.c — the installer's ELF interpreter rewrite (services/cni-plugin/bundle.c) on
 * synthetic images: the name read, a path padded with slashes, one too long refused, and images
 * that are not what they should be refused without a write. */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "services/cni-plugin/bundle.h"

#define INTERP_AT 200

/* A 64-bit ELF header, one PT_LOAD and one PT_INTERP naming interp (room bytes + NUL). */
static size_t make_image(char *buf, size_t cap, const char *interp, size_t room)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Phdr *ph = (Elf64_Phdr *)(buf + sizeof(*eh));
	size_t pad = room - strlen(interp);

	memset(buf, 0, cap);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_phoff = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 2;
	ph[0].p_type = PT_LOAD;
	ph[1].p_type = PT_INTERP;
	ph[1].p_offset = INTERP_AT;
	ph[1].p_filesz = room + 1;
	memset(buf + INTERP_AT, '/', pad);
	strcpy(buf + INTERP_AT + pad, interp);
	return INTERP_AT + room + 1 + 16;
}

static void test_rewrite(void **state)
{
	char img[512], name[64], err[256];
	size_t len = make_image(img, sizeof(img), "/lib64/ld-linux-x86-64.so.2", 80);

	(void)state;
	assert_int_equal(km_bundle_interp_name(img, len, name, sizeof(name), err, sizeof(err)), 0);
	assert_string_equal(name, "ld-linux-x86-64.so.2");
	assert_int_equal(km_bundle_set_interp(img, len, "/opt/cni/bin/kmesh-cni.d/ld-linux-x86-64.so.2",
					      err, sizeof(err)), 0);
	assert_int_equal(strlen(img + INTERP_AT), 80);
	assert_string_equal(img + INTERP_AT + 80 - 45, "/opt/cni/bin/kmesh-cni.d/ld-linux-x86-64.so.2");
	assert_int_equal(img[INTERP_AT], '/');
	assert_int_equal(img[INTERP_AT + 80 - 46], '/');
}

static void test_refusals(void **state)
{
	char img[512], before[512], err[256], name[64];
	size_t len = make_image(img, sizeof(img), "/lib64/ld-linux-x86-64.so.2", 30);

	(void)state;
	memcpy(before, img, sizeof(img));
	assert_int_equal(km_bundle_set_interp(img, len, "/opt/cni/bin/kmesh-cni.d/ld-linux-x86-64.so.2",
					      err, sizeof(err)), -1);
	assert_non_null(strstr(err, "does not fit the 30 bytes"));
	assert_int_equal(km_bundle_set_interp(img, len, "relative/ld.so", err, sizeof(err)), -1);
	assert_memory_equal(img, before, sizeof(img)); /* nothing written */

	img[INTERP_AT + 30] = 'x'; /* no NUL at the end of PT_INTERP */
	assert_int_equal(km_bundle_interp_name(img, len, name, sizeof(name), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "malformed"));
	memcpy(img, before, sizeof(img));
	((Elf64_Phdr *)(img + sizeof(Elf64_Ehdr)))[1].p_offset = 1u << 30; /* beyond the image */
	assert_int_equal(km_bundle_interp_name(img, len, name, sizeof(name), err, sizeof(err)), -1);
	memcpy(img, before, sizeof(img));
	((Elf64_Ehdr *)img)->e_phnum = 60000; /* headers beyond the image */
	assert_int_equal(km_bundle_interp_name(img, len, name, sizeof(name), err, sizeof(err)), -1);
	memcpy(img, before, sizeof(img));
	((Elf64_Phdr *)(img + sizeof(Elf64_Ehdr)))[1].p_type = PT_NOTE; /* static: no interpreter */
	assert_int_equal(km_bundle_interp_name(img, len, name, sizeof(name), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "names no interpreter"));
	assert_int_equal(km_bundle_interp_name("#!/bin/sh\n", 10, name, sizeof(name), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a 64-bit"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rewrite),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests_name("bundle", tests, NULL, NULL);
}
