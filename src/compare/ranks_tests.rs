use super::*;

#[test]
fn natural_order_reads_digit_runs_as_numbers() {
    let mut v = vec!["rank10", "rank2", "rank1", "rank02", "a"];
    v.sort_by(|a, b| natural(a, b));
    assert_eq!(v, ["a", "rank1", "rank02", "rank2", "rank10"]);
}
