//! RULES.md §6.2 item by item.
