"""fdclient.py: the supervisor's side of files by descriptor, for tests.

  python3 fdclient.py SOCKET HEAD [--write TEXT] [--zeros N] [--tail TAIL]
                      [--drop]

Sends HEAD (an HTTP request head; \\r\\n written as is) on the unix socket
SOCKET, takes the descriptor the agent hands over (recvmsg, SCM_RIGHTS),
writes TEXT (or N zero bytes) into it when given, sends TAIL (the rest of the request), reads
the answer to the end, and prints one JSON object: mark (a descriptor came
first), file ({size, mode, text} of it), answer (the rest, as text).
--drop closes the connection without taking anything, once the agent has
had time to hand the file over.
"""
import json
import os
import socket
import stat
import sys
import time


def main():
    path, head = sys.argv[1], sys.argv[2].encode()
    args = sys.argv[3:]
    opt = {}
    i = 0
    while i < len(args):
        if args[i] == '--drop':
            opt['drop'] = True
            i += 1
        else:
            opt[args[i][2:]] = args[i + 1]
            i += 2
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(head)
    if opt.get('drop'):
        time.sleep(0.5)
        s.close()
        print(json.dumps({'dropped': True}))
        return
    out = {'mark': False, 'file': None}
    data, anc, flags, _ = s.recvmsg(1, socket.CMSG_SPACE(4 * 4))
    fds = []
    for level, kind, d in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += list(memoryview(d).cast('i'))
    rest = b''
    if data == b'\0' and len(fds) == 1:
        fd = fds[0]
        out['mark'] = True
        st = os.fstat(fd)
        mode = {os.O_RDONLY: 'r', os.O_WRONLY: 'w', os.O_RDWR: 'rw'}[
            __import__('fcntl').fcntl(fd, __import__('fcntl').F_GETFL) & os.O_ACCMODE]
        out['file'] = {'size': st.st_size, 'regular': stat.S_ISREG(st.st_mode), 'mode': mode}
        if 'r' in mode:
            out['file']['text'] = os.pread(fd, 4096, 0).decode('latin1')
        if 'write' in opt:
            os.write(fd, opt['write'].encode())
        if 'zeros' in opt:
            os.write(fd, bytes(int(opt['zeros'])))
        os.close(fd)
    else:
        for fd in fds:
            os.close(fd)
        rest = data
    if 'tail' in opt:
        s.sendall(opt['tail'].encode())
    while True:
        b = s.recv(65536)
        if not b:
            break
        rest += b
    out['answer'] = rest.decode('latin1')
    print(json.dumps(out))


main()
