/* bundle.h — the plugin made to run on any node, whatever libraries (and glibc) the node has:
 * the shared objects this process loaded, its dynamic loader among them, are copied beside the
 * installed plugin into BIN_DIR/kmesh-cni.d/, and the installed copy's interpreter is pointed at
 * that loader. kmesh-cni is linked with DT_RPATH $ORIGIN/kmesh-cni.d (which, unlike RUNPATH, also
 * serves its libraries' own dependencies) and with its interpreter path padded with leading
 * slashes, so the same file runs from the build tree on the system's libraries and can take a
 * longer interpreter path in place. */
#ifndef KM_CNI_BUNDLE_H
#define KM_CNI_BUNDLE_H

#include <stddef.h>

#define KM_CNI_BUNDLE_DIR "kmesh-cni.d" /* beside the plugin binary */

/* Copy every shared object this process has loaded into dir (made 0755 if missing), each under
 * the name it was loaded by. A file already there of the same size is kept unless verify is set,
 * which compares contents. Returns the number of objects, or -1 with err filled. */
int km_bundle_libs(const char *dir, int verify, char *err, size_t errlen);

/* The interpreter named in an ELF image (len bytes): its basename into name. Returns 0, or -1
 * with err filled (not a 64-bit little-endian ELF, or no PT_INTERP). */
int km_bundle_interp_name(const char *data, size_t len, char *name, size_t namelen, char *err,
			  size_t errlen);

/* Point the image's PT_INTERP at loader (an absolute path), padded with leading slashes to the
 * room the image has. Returns 0, or -1 with err filled (the path longer than that room). */
int km_bundle_set_interp(char *data, size_t len, const char *loader, char *err, size_t errlen);

/* Remove dir and the files in it. Returns 0, or -1 with err filled. */
int km_bundle_remove(const char *dir, char *err, size_t errlen);

#endif
