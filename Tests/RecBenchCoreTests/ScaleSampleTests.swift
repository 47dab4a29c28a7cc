import Foundation
import Testing
import RecBenchCore
import RecBenchBench

/// The sized synthetic log: exact sizes, the shape it promises, the same bytes per seed,
/// and a file the loader reads.
@Suite struct ScaleSampleTests {
    func generate(_ shape: ScaleSample.Shape) throws -> (path: String, rows: [(user: String, item: String, time: Double)]) {
        let path = Fixtures.temporaryDirectory() + "/s/s.inter"
        let written = try ScaleSample(shape: shape).write(to: path)
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").dropFirst()
        let rows = lines.map { line -> (String, String, Double) in
            let f = line.split(separator: "\t")
            return (String(f[0]), String(f[1]), Double(f[2])!)
        }
        #expect(written == rows.count)
        return (path, rows)
    }

    @Test func sizesAndShapeAreAsPromised() throws {
        let shape = ScaleSample.Shape(users: 300, items: 500, interactions: 20_000)
        let (path, rows) = try generate(shape)
        #expect(rows.count == 20_000)
        let users = Dictionary(grouping: rows, by: \.user)
        #expect(users.count == 300)   // every user has at least one row
        // Timestamps increase within each user.
        for (_, history) in users { #expect(zip(history, history.dropFirst()).allSatisfy { $0.time < $1.time }) }
        // Log-normal activity: far from uniform (the busiest user has several times the mean).
        let counts = users.values.map(\.count)
        #expect(Double(counts.max()!) > 4 * Double(rows.count) / 300)
        // Power-law popularity: the top 10 % of items hold well over 10 % of the rows.
        let items = Dictionary(grouping: rows, by: \.item).values.map(\.count).sorted(by: >)
        #expect(Double(items.prefix(50).reduce(0, +)) > 0.4 * Double(rows.count))
        // Repeat consumption: some (user, item) pairs occur more than once.
        let pairs = Set(rows.map { "\($0.user) \($0.item)" })
        #expect(pairs.count < rows.count && Double(rows.count - pairs.count) > 0.03 * Double(rows.count))
        // The loader reads it, with every user and the items that occur.
        let folder = ((path as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
        let config = try Fixtures.config(dataset: "s", dataPath: folder)
        let dataset = try DatasetLoader.load(DataSettings(config))
        #expect(dataset.userCount == 300 && dataset.interactions.count == 20_000)
    }

    @Test func theSameSeedGivesTheSameBytes() throws {
        var shape = ScaleSample.Shape(users: 50, items: 80, interactions: 2_000)
        let a = try String(contentsOfFile: generate(shape).path, encoding: .utf8)
        let b = try String(contentsOfFile: generate(shape).path, encoding: .utf8)
        shape.seed += 1
        let c = try String(contentsOfFile: generate(shape).path, encoding: .utf8)
        #expect(a == b && a != c)
    }

    @Test func impossibleSizesAreRefused() {
        #expect(throws: RecBenchError.self) { try ScaleSample(shape: .init(users: 10, items: 5, interactions: 9)) }
        #expect(throws: RecBenchError.self) { try ScaleSample(shape: .init(users: 0, items: 5, interactions: 9)) }
    }
}
