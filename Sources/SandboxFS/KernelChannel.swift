// The session's device I/O, read and written through here for three things libfuse 3.14
// does not give.
//
// 1. Asks the kernel to leave set-user-ID, set-group-ID and file-capability removal to the
// filesystem (FUSE_HANDLE_KILLPRIV_V2), which libfuse 3.14 (Debian 12) cannot ask for.
// Without it the kernel sends a getxattr of security.capability before a file's first
// write after any attribute refresh and before every chown: one round trip each (a
// random 4 KiB write was two), for an attribute no sandbox file carries. With it the
// kernel marks the mount SB_NOSEC and the filesystem drops those privileges itself
// (Privileges.swift).
//
// libfuse builds its INIT reply from the capabilities it knows, so the flag is added on
// the way out: the two functions below note the INIT request's id and whether the
// kernel offers the flag, and set the flag in that one reply.
//
// 2. Whether the kernel asks for set-ID bits to go in the request a worker thread is
// serving (the session loop, FuseLoop, reads a request and serves it on the same
// thread): it sets that flag when the caller lacks CAP_FSETID, and libfuse 3.14 does
// not pass it on.
//
// 3. FUSE over io_uring (FUSE_OVER_IO_URING), taken when the mount asked for it (queues
// were made, MountSession) and the kernel offers it (its fuse module's enable_uring is
// set): the flag goes into the INIT reply the same way,
// with the payload size the kernel will derive from that reply; the loop then starts
// the queues (ring_queues.c), and replies to the requests they serve go back to them
// here instead of to /dev/fuse.
import CFuse
import FuseLoop
import Glibc
import Synchronization

enum KernelChannel {
    // From the FUSE ABI (fuse_abi.h).
    private static let inHeaderSize = Int(DPFS_FUSE_IN_HEADER_SIZE)
    private static let opcodeOffset = Int(DPFS_FUSE_IN_OPCODE_OFFSET)
    private static let uniqueOffset = Int(DPFS_FUSE_IN_UNIQUE_OFFSET)
    private static let writeOpcode = UInt32(DPFS_FUSE_OPCODE_WRITE)
    private static let writeFlagsOffset = Int(DPFS_FUSE_WRITE_FLAGS_OFFSET), writeKillsSetID = UInt32(DPFS_FUSE_WRITE_KILL_SUIDGID)
    private static let setattrOpcode = UInt32(DPFS_FUSE_OPCODE_SETATTR)
    private static let setattrValidOffset = Int(DPFS_FUSE_SETATTR_VALID_OFFSET), setattrKillsSetID = UInt32(DPFS_FUSE_FATTR_KILL_SUIDGID)
    private static let openOpcode = UInt32(DPFS_FUSE_OPCODE_OPEN)
    private static let openFlagsOffset = Int(DPFS_FUSE_OPEN_FLAGS_OFFSET), openKillsSetID = UInt32(DPFS_FUSE_OPEN_KILL_SUIDGID)
    private static let initOpcode = UInt32(DPFS_FUSE_OPCODE_INIT)
    private static let initInFlagsOffset = Int(DPFS_FUSE_INIT_IN_FLAGS_OFFSET), initInFlags2Offset = Int(DPFS_FUSE_INIT_IN_FLAGS2_OFFSET)
    private static let outErrorOffset = Int(DPFS_FUSE_OUT_ERROR_OFFSET)
    private static let outHeaderSize = Int(DPFS_FUSE_OUT_HEADER_SIZE)
    private static let initOutFlagsOffset = Int(DPFS_FUSE_INIT_OUT_FLAGS_OFFSET)
    private static let initOutMaxWriteOffset = Int(DPFS_FUSE_INIT_OUT_MAX_WRITE_OFFSET)
    private static let initOutMaxPagesOffset = Int(DPFS_FUSE_INIT_OUT_MAX_PAGES_OFFSET)
    private static let initOutFlags2Offset = Int(DPFS_FUSE_INIT_OUT_FLAGS2_OFFSET)
    private static let initOutMinimumSize = Int(DPFS_FUSE_INIT_OUT_MINIMUM_SIZE)
    static let handleKillPrivV2 = UInt32(DPFS_FUSE_HANDLE_KILLPRIV_V2)
    private static let initExt = UInt32(DPFS_FUSE_INIT_EXT), maxPages = UInt32(DPFS_FUSE_MAX_PAGES)
    private static let overIOUring = UInt32(DPFS_FUSE_OVER_IO_URING_FLAGS2)
    private static let minimumPayload = Int(DPFS_FUSE_MIN_READ_BUFFER), defaultMaxPages = Int(DPFS_FUSE_DEFAULT_MAX_PAGES)

    /// The INIT request's id while its reply is due; 0 before INIT, `settled` after.
    private static let pendingInit = Atomic<UInt64>(0)
    private static let settled = UInt64.max
    /// Whether the kernel took the flag: only then must the filesystem drop privileges.
    static let negotiated = Atomic<Bool>(false)
    /// What the INIT request offered: KILLPRIV_V2 (1), io_uring (2).
    private static let offered = Atomic<UInt32>(0)
    /// The transport requests come by: "io_uring" once the queues serve, else "/dev/fuse".
    static var transport: String {
        rings.map { dpfs_rings_started($0) != 0 } == true ? "io_uring" : "/dev/fuse"
    }

    /// The session's io_uring queues (ring_queues.c), made before the loop; 0 for none.
    private static let ringsAddress = Atomic<UInt>(0)

    private static var rings: OpaquePointer? {
        OpaquePointer(bitPattern: ringsAddress.load(ordering: .acquiring))
    }

    /// Per worker thread: 1 if the request asks for set-ID bits to go, 2 if it says
    /// they stay, nil if it says nothing either way.
    private static let currentKillsSetID = makeKey()

    private static func makeKey() -> pthread_key_t? {
        var key = pthread_key_t()
        return pthread_key_create(&key, nil) == 0 ? key : nil
    }

    /// Routes the session's device reads and replies through here; call after
    /// fuse_session_mount and before the loop. False if libfuse refused (nothing changes then).
    static func install(on session: OpaquePointer) -> Bool {
        _ = currentKillsSetID
        var io = fuse_custom_io()
        io.read = { fd, buffer, length, _ in
            let n = Glibc.read(fd, buffer, length)
            if n >= KernelChannel.inHeaderSize, let buffer {
                let request = UnsafeRawPointer(buffer)
                KernelChannel.noteServing(request, length: n)
                if n >= KernelChannel.inHeaderSize + 16, KernelChannel.pendingInit.load(ordering: .relaxed) == 0 {
                    KernelChannel.noteRequest(request, length: n)
                }
            }
            return n
        }
        io.writev = { fd, iov, count, _ in
            guard let iov else { return Glibc.writev(fd, nil, count) }
            if let rings = KernelChannel.rings {
                let taken = dpfs_ring_take_reply(rings, iov, count)
                if taken >= 0 { return taken }
            }
            if count >= 2, KernelChannel.pendingInit.load(ordering: .relaxed) != KernelChannel.settled {
                let ringSize = KernelChannel.amendReply(iov)
                let written = Glibc.writev(fd, iov, count)
                // The kernel has read the reply: the queues can register now (the loop
                // starts them when this request is done).
                if written > 0, let ringSize, let rings = KernelChannel.rings {
                    dpfs_rings_note_negotiated(rings, ringSize)
                }
                return written
            }
            return Glibc.writev(fd, iov, count)
        }
        return fuse_session_custom_io(session, &io, fuse_session_fd(session)) == 0
    }

    /// After the loop (whose end stopped the queues): replies go to /dev/fuse again.
    static func forgetRings() {
        ringsAddress.store(0, ordering: .releasing)
    }

    /// The buffer a read's reply may be written into in place when the calling thread
    /// serves the read for an io_uring queue (dpfs_ring_read_space); nil otherwise.
    static func readReplySpace(_ size: Int) -> UnsafeMutableRawPointer? {
        guard let rings else { return nil }
        return dpfs_ring_read_space(rings, size)
    }

    /// Whether the request the calling thread serves may wait on the kernel's write-back
    /// and page drop: not on an io_uring queue's own thread (dpfs_ring_may_wait_on_kernel).
    static var mayWaitOnKernel: Bool {
        guard let rings else { return true }
        return dpfs_ring_may_wait_on_kernel(rings) != 0
    }

    /// Makes the session's io_uring queues, used if INIT negotiates them; pass the
    /// result to the loop. Call after install(on:).
    static func makeRings(for session: OpaquePointer) -> OpaquePointer? {
        guard let made = dpfs_rings_new(session, { request, length in
            guard let request, length >= KernelChannel.inHeaderSize else { return }
            KernelChannel.noteServing(request, length: length)
        }) else { return nil }
        ringsAddress.store(UInt(bitPattern: made), ordering: .releasing)
        return made
    }

    private static func noteServing(_ request: UnsafeRawPointer, length: Int) {
        guard let key = currentKillsSetID else { return }
        func flag(_ offset: Int, _ bit: UInt32) -> UInt {
            guard length >= inHeaderSize + offset + 4 else { return 0 }
            return request.loadUnaligned(fromByteOffset: inHeaderSize + offset, as: UInt32.self) & bit != 0 ? 1 : 2
        }
        let verdict: UInt
        switch request.loadUnaligned(fromByteOffset: opcodeOffset, as: UInt32.self) {
        case writeOpcode: verdict = flag(writeFlagsOffset, writeKillsSetID)
        case setattrOpcode: verdict = flag(setattrValidOffset, setattrKillsSetID)
        case openOpcode: verdict = flag(openFlagsOffset, openKillsSetID)
        default: verdict = 0
        }
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: verdict))
    }

    /// Whether the request being served takes set-ID bits away: as the kernel said, or,
    /// for a request that says nothing (fallocate), unless the caller is root.
    static func requestDropsPrivileges(callerUID: uid_t) -> Bool {
        let said = currentKillsSetID.map { UInt(bitPattern: pthread_getspecific($0)) } ?? 0
        if said != 0 { return said == 1 }
        return callerUID != 0
    }

    private static func noteRequest(_ request: UnsafeRawPointer, length: Int) {
        guard request.loadUnaligned(fromByteOffset: opcodeOffset, as: UInt32.self) == initOpcode else { return }
        let flags = request.loadUnaligned(fromByteOffset: inHeaderSize + initInFlagsOffset, as: UInt32.self)
        let flags2 = flags & initExt != 0 && length >= inHeaderSize + initInFlags2Offset + 4
            ? request.loadUnaligned(fromByteOffset: inHeaderSize + initInFlags2Offset, as: UInt32.self) : 0
        let wanted = (flags & handleKillPrivV2 != 0 ? 1 : 0) | (flags2 & overIOUring != 0 && rings != nil ? 2 : 0)
        guard wanted != 0 else {
            pendingInit.store(settled, ordering: .relaxed)
            return
        }
        offered.store(UInt32(wanted), ordering: .relaxed)
        pendingInit.store(request.loadUnaligned(fromByteOffset: uniqueOffset, as: UInt64.self), ordering: .relaxed)
    }

    /// Sets the offered flags in the INIT reply; with io_uring taken, the size of the
    /// payload buffers the kernel will want (as fuse_uring_create derives it).
    private static func amendReply(_ iov: UnsafeMutablePointer<iovec>) -> Int? {
        let pending = pendingInit.load(ordering: .relaxed)
        guard pending != 0, let header = iov[0].iov_base, iov[0].iov_len >= outHeaderSize,
              header.loadUnaligned(fromByteOffset: uniqueOffset, as: UInt64.self) == pending else { return nil }
        pendingInit.store(settled, ordering: .relaxed)
        guard header.loadUnaligned(fromByteOffset: outErrorOffset, as: Int32.self) == 0,
              let reply = iov[1].iov_base, iov[1].iov_len >= initOutFlagsOffset + 4 else { return nil }
        let wanted = offered.load(ordering: .relaxed)
        let flags = reply.loadUnaligned(fromByteOffset: initOutFlagsOffset, as: UInt32.self)
        if wanted & 1 != 0 {
            reply.storeBytes(of: flags | handleKillPrivV2, toByteOffset: initOutFlagsOffset, as: UInt32.self)
            negotiated.store(true, ordering: .releasing)
        }
        guard wanted & 2 != 0, flags & initExt != 0, iov[1].iov_len >= initOutMinimumSize else { return nil }
        let flags2 = reply.loadUnaligned(fromByteOffset: initOutFlags2Offset, as: UInt32.self)
        reply.storeBytes(of: flags2 | overIOUring, toByteOffset: initOutFlags2Offset, as: UInt32.self)
        let maxWrite = Int(reply.loadUnaligned(fromByteOffset: initOutMaxWriteOffset, as: UInt32.self))
        let pages = flags & maxPages != 0
            ? Int(reply.loadUnaligned(fromByteOffset: initOutMaxPagesOffset, as: UInt16.self)) : defaultMaxPages
        return max(minimumPayload, maxWrite, pages * Int(sysconf(Int32(_SC_PAGESIZE))))
    }
}
