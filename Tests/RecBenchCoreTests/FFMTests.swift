import Logging
import Testing
import RecBenchCore
import Linalg

/// FFM's own tests: how `fields` groups the model's input columns.
struct FFMTests {
    @Test func groupsNameWhatTheyMiss() {
        let (groups, notes) = FFM.groups(["user_id", "age", "item_id"], ["a": ["user_id", "item_id", "agee"]])
        #expect(groups == [0, 1, 0])
        #expect(notes.count == 2 && notes[0].contains("'age'") && notes[1].contains("'agee'"))
    }

    /// Two groups give each feature two vectors, one per group it may meet.
    @Test func eachFeatureHasOneVectorPerGroup() throws {
        let (split, d) = try featureFixture()
        var model = try Fixtures.model(FFM.self, ["fields": .map(["0": .list([.string("user_id"), .string("item_id")]),
                                                                  "1": .list([.string("age"), .string("genre"), .string("price")])])])
        var rng = SeededGenerator(seed: 5)
        let context = FitContext(seed: 5, compute: Compute(threads: 1), logger: Logger(label: "test"))
        let parameters = model.prepare(TrainingData(dataset: d, split: split), context: context, rng: &rng)
        #expect(parameters["embedding"].columns == 2 * 10)
    }
}
