def greet( name,greeting = 'Hello' ) :
  return  greeting+', '+name+'!'
values = { 'a':1,
  'b':[1,2,3,], }
if values ['a']==1 : print( greet ( 'room' ) )
