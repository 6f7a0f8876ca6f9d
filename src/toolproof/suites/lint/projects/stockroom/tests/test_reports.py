import unittest
from decimal import Decimal

from stockroom import Inventory, Item, Location
from stockroom.pricing import discount_rate, order_total, price_list
from stockroom.reports import reorder_report, stock_report


class ReportTest(unittest.TestCase):
    def test_stock_report_totals(self) -> None:
        inventory = Inventory([Item("A-1", "Tape", 2.5, 4, [Location("A", 1)])])
        report = stock_report(inventory)
        self.assertIn("A-01", report)
        self.assertTrue(report.splitlines()[-1].endswith("10.00"))
        self.assertEqual(reorder_report(inventory), "reorder A-1 (4 left)")

    def test_prices(self) -> None:
        tape = Item("A-1", "Tape", 2.5)
        self.assertEqual(discount_rate(60), Decimal("0.05"))
        self.assertEqual(order_total(tape, 100, with_vat=False), Decimal("225.00"))
        self.assertEqual(price_list([tape]), {"A-1": Decimal("3.00")})


if __name__ == "__main__":
    unittest.main()
