"""SQLAlchemy 2 ORM on an SQLite database file: mapped classes with a relationship, a session
that commits, a fresh session that queries (join, aggregate), updates and deletes.

    sqla-app DATABASE
"""

import json
import sys

from sqlalchemy import ForeignKey, create_engine, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "author"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    books: Mapped[list["Book"]] = relationship(back_populates="author", cascade="all")


class Book(Base):
    __tablename__ = "book"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str]
    year: Mapped[int]
    author_id: Mapped[int] = mapped_column(ForeignKey("author.id"))
    author: Mapped[Author] = relationship(back_populates="books")


def main():
    import sqlalchemy

    engine = create_engine(f"sqlite:///{sys.argv[1]}")
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        session.add_all([
            Author(name="Le Guin", books=[Book(title="The Dispossessed", year=1974),
                                          Book(title="The Lathe of Heaven", year=1971)]),
            Author(name="Lem", books=[Book(title="Solaris", year=1961)]),
        ])
        session.commit()
    with Session(engine) as session:
        counts = session.execute(select(Author.name, func.count(Book.id)).join(Author.books)
                                 .group_by(Author.name).order_by(Author.name)).all()
        lem = session.scalars(select(Author).where(Author.name == "Lem")).one()
        lem.books[0].year = 1962
        session.delete(session.scalars(select(Book).where(Book.title.like("%Lathe%"))).one())
        session.commit()
    with Session(engine) as session:
        titles = [(book.title, book.year, book.author.name)
                  for book in session.scalars(select(Book).order_by(Book.title))]
    from sqlalchemy.util import has_compiled_ext
    print(json.dumps({"counts": [list(row) for row in counts], "titles": titles,
                      "version": sqlalchemy.__version__, "compiled": has_compiled_ext()}))
