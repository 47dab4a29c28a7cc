import Foundation

/// Which build of recbench is running: the linker's GNU build id of the executable. Two builds
/// of the same version from different sources differ here where the version string does not,
/// so a training state saved by one is not continued by the other. nil where the platform or
/// the link gives none.
public enum BuildIdentity {
    /// The running executable's build id in hex, read once.
    public static let current: String? = readBuildID()

    /// Linux: the note segments of the executable's ELF program headers, read through
    /// /proc/self/exe (the running file even when a rebuild has replaced it on disk).
    private static func readBuildID() -> String? {
        guard let file = FileHandle(forReadingAtPath: "/proc/self/exe") else { return nil }
        defer { try? file.close() }
        func bytes(at offset: UInt64, _ count: Int) -> [UInt8]? {
            guard count > 0, count <= 1 << 20, (try? file.seek(toOffset: offset)) != nil,
                  let data = try? file.read(upToCount: count), data.count == count else { return nil }
            return Array(data)
        }
        // ELF64, little-endian: the program headers' offset, entry size and count.
        guard let elf = bytes(at: 0, 64), elf.starts(with: [0x7F, 0x45, 0x4C, 0x46, 2, 1]) else { return nil }
        func value(_ b: [UInt8], _ at: Int, _ size: Int) -> UInt64 { (0..<size).reduce(0) { $0 | UInt64(b[at + $1]) << (8 * UInt64($1)) } }
        let (table, entry, count) = (value(elf, 0x20, 8), Int(value(elf, 0x36, 2)), Int(value(elf, 0x38, 2)))
        guard entry >= 56, let headers = bytes(at: table, entry * count) else { return nil }
        for index in 0..<count where value(headers, index * entry, 4) == 4 {   // PT_NOTE
            let (offset, size) = (value(headers, index * entry + 8, 8), Int(value(headers, index * entry + 32, 8)))
            if let notes = bytes(at: offset, size), let id = notes.withUnsafeBytes({ gnuBuildID(notes: $0) }) {
                return id.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
            }
        }
        return nil
    }

    /// The descriptor of the first note named "GNU" of type 3 (NT_GNU_BUILD_ID) in an ELF note
    /// segment: 4-byte name size, descriptor size and type, then the name and the descriptor,
    /// each padded to 4 bytes. nil when there is none or the segment is cut short.
    public static func gnuBuildID(notes: UnsafeRawBufferPointer) -> [UInt8]? {
        func padded(_ n: Int) -> Int { (n + 3) & ~3 }
        var offset = 0
        while offset + 12 <= notes.count {
            let word = { (at: Int) in Int(notes.loadUnaligned(fromByteOffset: offset + at, as: UInt32.self)) }
            let (nameSize, descSize, type) = (word(0), word(4), word(8))
            let name = offset + 12, desc = name + padded(nameSize)
            guard nameSize <= notes.count, descSize <= notes.count, desc + descSize <= notes.count else { return nil }
            if type == 3 && nameSize == 4 && Array(notes[name..<name + 4]) == Array("GNU\0".utf8) {
                return descSize > 0 ? Array(notes[desc..<desc + descSize]) : nil
            }
            offset = desc + padded(descSize)
        }
        return nil
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
