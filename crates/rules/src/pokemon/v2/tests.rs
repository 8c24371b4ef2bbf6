//! RULES.md §6.1 item by item.
