"""lxml: an XML document with namespaces parsed, queried with XPath (namespaced paths, functions,
attributes), transformed with XSLT, and an HTML fragment parsed with lxml.html."""

import json

CATALOG = b"""<?xml version="1.0"?>
<catalog xmlns="urn:example:books" xmlns:p="urn:example:price">
  <book id="b1"><title>Dune</title><p:price currency="EUR">9.50</p:price></book>
  <book id="b2"><title>Neuromancer</title><p:price currency="EUR">7.25</p:price></book>
  <book id="b3"><title>Solaris</title><p:price currency="USD">11.00</p:price></book>
</catalog>"""

STYLESHEET = b"""<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:b="urn:example:books">
  <xsl:output method="text"/>
  <xsl:template match="/">
    <xsl:for-each select="//b:book"><xsl:sort select="b:title"/>
      <xsl:value-of select="@id"/>=<xsl:value-of select="b:title"/>;</xsl:for-each>
  </xsl:template>
</xsl:stylesheet>"""


def main():
    from lxml import etree, html

    namespaces = {"b": "urn:example:books", "p": "urn:example:price"}
    root = etree.fromstring(CATALOG)
    page = html.fromstring("<div><p class='x'>one</p><p>two <a href='/three'>3</a></p></div>")
    print(json.dumps({
        "titles": root.xpath("//b:book/b:title/text()", namespaces=namespaces),
        "euro_total": root.xpath("sum(//p:price[@currency='EUR'])", namespaces=namespaces),
        "usd_ids": root.xpath("//b:book[p:price/@currency='USD']/@id", namespaces=namespaces),
        "xslt": str(etree.XSLT(etree.fromstring(STYLESHEET))(root)).strip(),
        "html": [page.xpath("string(//p[@class='x'])"), page.xpath("//a/@href"),
                 page.text_content()],
        "roundtrip": etree.tostring(root.find("b:book", namespaces), encoding="unicode"),
        "versions": [etree.LXML_VERSION, etree.LIBXML_VERSION],
        "etree": etree.__file__,
    }))
