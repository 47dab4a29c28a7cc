import Foundation
import Testing

/// Same seed, config, data and threads → the same result file, byte for byte once the
/// fields that measure the machine (seconds, validation seconds, memory, the finishing time, per-step timings)
/// are set aside; changed data → a new fingerprint and run key, so a sweep cannot mistake
/// the old record for the new data's.
@Suite struct DeterminismTests {
    /// The stored record of `model` in `w` (one per model in these tests), parsed.
    func record(_ w: Workspace, _ model: String) throws -> [String: Any] {
        let path = try #require(w.resultFiles.first { ($0 as NSString).lastPathComponent.hasPrefix(model + "-") })
        return try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: w.root + "/out/" + path))) as! [String: Any]
    }

    /// `value` without the machine's measurements, re-encoded with sorted keys.
    func withoutMeasurements(_ value: Any) throws -> Data {
        func strip(_ v: Any) -> Any {
            if let map = v as? [String: Any] {
                return map.filter { !["seconds", "valid_seconds", "finished_at", "peak_memory_mib", "fit_steps"].contains($0.key) }.mapValues(strip)
            }
            if let list = v as? [Any] { return list.map(strip) }
            return v
        }
        return try JSONSerialization.data(withJSONObject: strip(value), options: [.sortedKeys])
    }

    @Test(arguments: ["EASE", "BPR", "MultiVAE"])
    func twoRunsStoreTheSameRecord(_ model: String) throws {
        let w = try Workspace()
        let arguments = ["run", "--model", model, "--config", "run.yml", "--set", "epochs=3", "--set", "threads=2", "--quiet"]
        #expect(try w.run(arguments).status == 0)
        let first = try record(w, model)
        #expect(try w.run(arguments).status == 0)   // the same run key: the record is rewritten
        let second = try record(w, model)
        #expect(try withoutMeasurements(first) == withoutMeasurements(second))
        // The measurements themselves are present (so the comparison above set aside real fields).
        #expect(first["seconds"] != nil && first["finished_at"] != nil && first["peak_memory_mib"] != nil)
    }

    @Test func changedDataChangesTheFingerprintAndRunKey() throws {
        let w = try Workspace()
        #expect(try w.run(["run", "--model", "Pop", "--config", "run.yml", "--quiet"]).status == 0)
        let before = try record(w, "Pop")
        // One timestamp changed: same users, items and order, different bytes.
        let path = w.root + "/data/tiny/tiny.inter"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try text.replacingOccurrences(of: "\t1\n", with: "\t2\n").write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try String(contentsOfFile: path, encoding: .utf8) != text)
        #expect(try w.run(["run", "--model", "Pop", "--config", "run.yml", "--quiet"]).status == 0)
        #expect(w.resultFiles.count == 2)
        let fingerprints = try w.resultFiles.map { file -> String in
            let r = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: w.root + "/out/" + file))) as! [String: Any]
            return "\(r["dataset_fingerprint"]!) \(r["run_key"]!)"
        }
        #expect(Set(fingerprints).count == 2)
        #expect(before["run_key"] as? String != nil)
    }
}
