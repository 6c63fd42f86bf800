from connectapi.budgets.subjects import budget_subject


def test_ipv6_clients_are_counted_by_their_slash_64() -> None:
    assert budget_subject("2001:db8:1:2::1") == budget_subject("2001:db8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::/64"
    assert budget_subject("2001:db8:1:3::1") != budget_subject("2001:db8:1:2::1")
    assert budget_subject("2001:DB8:1:2:0:0:0:1") == "2001:db8:1:2::/64"  # one spelling per subject


def test_ipv4_and_mapped_addresses_count_as_themselves() -> None:
    assert budget_subject("198.51.100.7") == "198.51.100.7"
    assert budget_subject("::ffff:198.51.100.7") == "198.51.100.7"
    assert budget_subject("198.51.100.8") != budget_subject("198.51.100.7")
    assert budget_subject("not-an-address") == "not-an-address"
