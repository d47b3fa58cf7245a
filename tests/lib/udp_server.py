#!/usr/bin/python3
"""A test resolver "pod": answers each UDP datagram with "<name>:<datagram>" (IPv4 and IPv6)."""
import socket
import sys


def main():
    name, port = sys.argv[1], int(sys.argv[2])
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    while True:
        data, src = s.recvfrom(512)
        s.sendto(name.encode() + b":" + data, src)


if __name__ == "__main__":
    main()
