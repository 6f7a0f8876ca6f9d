"""stockroom: inventory bookkeeping for small warehouses."""

from .inventory import Inventory, StockError
from .models import Item, Location
from .units import QuantityError, parse_quantity

__all__ = ["Inventory", "Item", "Location", "QuantityError", "StockError", "parse_quantity"]
__version__ = "0.4.1"
