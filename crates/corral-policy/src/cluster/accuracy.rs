//! Clustering accuracy against a reference clustering (paper 5, Sec. 3.2).

/// `accuracy = (1 / C(n, 2)) sum_{i<j} A_ij`, where `A_ij` is 1 when threads
/// i and j are together in both clusterings or apart in both (paper 5,
/// Sec. 3.2, the relationship matrices M and M1). Labels are arbitrary
/// cluster ids per thread. Fewer than two threads give 1.
///
/// # Panics
/// If the two label slices differ in length.
pub fn clustering_accuracy(reference: &[u32], result: &[u32]) -> f64 {
    assert_eq!(
        reference.len(),
        result.len(),
        "one label per thread in both clusterings"
    );
    let n = reference.len();
    if n < 2 {
        return 1.0;
    }
    let mut agree: u64 = 0;
    for i in 0..n {
        for j in i + 1..n {
            let together = reference[i] == reference[j];
            agree += u64::from(together == (result[i] == result[j]));
        }
    }
    let pairs = (n as u64) * (n as u64 - 1) / 2;
    agree as f64 / pairs as f64
}
