import Foundation
import Testing

/// `recbench convert` on malformed CSV: one stderr line with file:line, exit ≠ 0, no output.
@Suite struct ConvertCLITests {
    func expectRejected(_ csv: [UInt8], mentions needles: [String]) throws {
        let w = try Workspace()
        try Data(csv).write(to: URL(fileURLWithPath: w.root + "/bad.csv"))
        try Data("item_id,item_name\n10,x\n".utf8).write(to: URL(fileURLWithPath: w.root + "/items.csv"))
        let out = try w.run(["convert", "--inter", "bad.csv", "--item", "items.csv", "--name", "shop", "--out", "conv"])
        #expect(out.status != 0)
        #expect(out.stderr.split(separator: "\n").count == 1, "stderr: \(out.stderr)")
        for needle in needles { #expect(out.stderr.contains(needle), "stderr lacks '\(needle)': \(out.stderr)") }
        let left = (try? FileManager.default.contentsOfDirectory(atPath: w.root + "/conv")) ?? []
        #expect(left.isEmpty, "partial output: \(left)")
    }

    @Test func raggedRow() throws {
        try expectRejected(Array("user_id,item_id,timestamp\n1,10,5\n2,11\n".utf8), mentions: ["bad.csv:3", "expected 3 fields"])
    }

    @Test func badTimestamp() throws {
        try expectRejected(Array("user_id,item_id,timestamp\n1,10,2024-04-01\n2,11,2024-04-31\n".utf8),
                           mentions: ["bad.csv:3", "'timestamp'", "not a timestamp"])
    }

    @Test func duplicateHeader() throws {
        try expectRejected(Array("user_id,item_id,item_id\n1,10,11\n".utf8), mentions: ["bad.csv:1", "duplicate column"])
    }

    @Test func emptyFile() throws {
        try expectRejected([], mentions: ["bad.csv:1", "empty file"])
    }

    @Test func nonUTF8Byte() throws {
        try expectRejected(Array("user_id,item_id,timestamp\n1,10,5\n".utf8) + [0x32, 0x2C, 0xFF, 0x2C, 0x35, 0x0A], mentions: ["bad.csv:3", "not valid UTF-8"])
    }

    @Test func aGoodConversionReportsWhatItInferred() throws {
        let w = try Workspace()
        try "user_id,item_id,timestamp,price\n1,10,2024-04-01 10:00:00,1.5\n".write(toFile: w.root + "/ok.csv", atomically: true, encoding: .utf8)
        let out = try w.run(["convert", "--inter", "ok.csv", "--name", "shop", "--out", "conv"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.stdout.contains("timestamp:float") && out.stdout.contains("dates converted"))
        #expect(out.stdout.contains("price:float") && out.stdout.contains("decimal"))
        #expect(FileManager.default.fileExists(atPath: w.root + "/conv/shop.inter"))
    }
}
