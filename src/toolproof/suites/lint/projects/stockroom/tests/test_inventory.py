import unittest

from stockroom import Inventory, Item, Location, QuantityError, StockError, parse_quantity


def sample() -> Inventory:
    return Inventory(
        [
            Item("B-100", "Bolt M6", 0.12, 400, [Location("B", 3)], {"hardware"}),
            Item("N-200", "Nut M6", 0.05, 3, [], {"hardware"}),
            Item("G-300", "Gloves", 4.5, 12),
        ]
    )


class InventoryTest(unittest.TestCase):
    def test_receive_reads_units(self) -> None:
        inventory = sample()
        self.assertEqual(inventory.receive("N-200", "2 dozen", Location("B", 4)), 27)
        self.assertEqual(inventory.require("N-200").locations, [Location("B", 4)])

    def test_ship_refuses_more_than_stock(self) -> None:
        with self.assertRaises(StockError):
            sample().ship("N-200", 4)

    def test_low_stock_and_tags(self) -> None:
        inventory = sample()
        self.assertEqual([i.sku for i in inventory.low_stock()], ["N-200"])
        self.assertEqual([i.sku for i in inventory.tagged("hardware")], ["B-100", "N-200"])

    def test_quantities(self) -> None:
        self.assertEqual(parse_quantity("3 boxes"), 72)
        with self.assertRaises(QuantityError):
            parse_quantity("three")


if __name__ == "__main__":
    unittest.main()
