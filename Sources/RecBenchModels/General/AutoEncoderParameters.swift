import RecBenchSupport
import RecBenchData
import RecBenchContract
/// What the variational auto-encoders share beyond their keys (`SharedKeys`): the KL
/// weight's schedule.
public enum AutoEncoderParameters {
    /// β after `step` batches: min(cap, step / total), or the cap when there is no ramp.
    public static func klWeight(step: Int, cap: Float, totalSteps: Int) -> Float {
        totalSteps > 0 ? min(cap, Float(step) / Float(totalSteps)) : cap
    }
}
