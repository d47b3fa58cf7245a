/* kube_name.h — Kubernetes object names checked before they go into an API path or a file
 * name; no client needed (the CNI plugin checks CNI_ARGS with it). */
#ifndef KM_SHARED_KUBE_NAME_H
#define KM_SHARED_KUBE_NAME_H

/* 1 if s is a valid DNS-1123 subdomain (names of namespaces and pods), so it can be put into
 * an API path as is. */
int km_kube_valid_name(const char *s);

#endif
