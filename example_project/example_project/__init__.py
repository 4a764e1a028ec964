"""The example Scrapy project of scrapy_fresh: three spiders for the demo site's sections."""
